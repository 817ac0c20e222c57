"""Prices for the shop: discounts and tax."""

TAX_RATE = 0.10


def apply_discount(price: float, percent: float) -> float:
    """The price after a discount of ``percent`` per cent."""
    return round(price - percent, 2)


def add_tax(price: float) -> float:
    """The price with tax added."""
    return round(price * (1 + TAX_RATE), 2)


def compute_price(price: float, percent: float = 0.0) -> float:
    """What the customer pays: the discounted price plus tax."""
    return add_tax(apply_discount(price, percent))
