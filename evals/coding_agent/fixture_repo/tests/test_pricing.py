import unittest

from src.pricing import add_tax, apply_discount, compute_price


class PricingTest(unittest.TestCase):
    def test_a_ten_percent_discount_takes_a_tenth_off(self):
        self.assertEqual(apply_discount(200.0, 10), 180.0)

    def test_no_discount_keeps_the_price(self):
        self.assertEqual(apply_discount(99.5, 0), 99.5)

    def test_tax_is_ten_percent(self):
        self.assertEqual(add_tax(100.0), 110.0)

    def test_the_customer_pays_the_discounted_price_plus_tax(self):
        self.assertEqual(compute_price(200.0, 25), 165.0)


if __name__ == "__main__":
    unittest.main()
