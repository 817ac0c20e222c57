"""Embedders turn texts into vectors for ``semantic_similarity``; one module per embedder."""

from evalh_pipeline.embedders.base import Embedder, EmbedderConfigModel, EmbedderError, EmbedderRateLimited
from evalh_pipeline.embedders.registry import EMBEDDERS, EmbedderUnavailable, build_embedder, check_embedder_spec

__all__ = ["EMBEDDERS", "Embedder", "EmbedderConfigModel", "EmbedderError", "EmbedderRateLimited",
           "EmbedderUnavailable", "build_embedder", "check_embedder_spec"]
