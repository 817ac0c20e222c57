"""`evalh view`: a local, read-only web viewer over run folders (this project's and eval-harness's).

Server-rendered pages (Starlette + Jinja2, served by uvicorn) over the queries of
:mod:`evalh_pipeline.queries` (DuckDB SQL, paged on the server). Everything a run holds is
untrusted and escaped; the pages run no script but the viewer's own static/keys.js (keyboard
navigation; the Content-Security-Policy forbids any other).
"""
