"""A kind of your own: money, an amount with two decimal places.

    python examples/money.py --storage sqlite:///shop.db

JSON and XML say "12.30"; every SQL store keeps integer cents (1230);
products sort, filter and take ranges by price (?sort=price, ?price=12.30,
?price[gte]=10). One class, and usersvc serves it everywhere: stores,
pages, OpenAPI, ``usersvc copy`` (given ``--kinds money``, from this folder).
"""
import re
import sys
from decimal import Decimal

from usersvc import Schema, text
from usersvc.fields import Field, FieldError
from usersvc.serving import main

_AMOUNT = re.compile(r"-?[0-9]{1,13}(\.[0-9]{1,2})?")


class Money(Field):
    """An amount of at most 13 digits and 2 decimal places, sent as a
    string ("12.3" is "12.30"); kept in cents, compared by them."""

    type = collated_type = "integer"    # kept as cents, compared as cents
    ordered = True                      # a sort of it takes ranges (?price[gte]=10)
    input_attributes = ' inputmode="decimal"'

    def __call__(self, value):
        if type(value) is str and _AMOUNT.fullmatch(value.strip()):
            return f"{Decimal(value.strip()) + 0:.2f}"      # (+ 0: no "-0.00")
        raise FieldError('must be an amount as a string, at most two decimals ("12.30")')

    def to_stored(self, value):
        return int(Decimal(value) * 100)

    def from_stored(self, cents):
        return f"{Decimal(cents) / 100:.2f}"

    collate = to_stored             # cents order amounts as numbers do

    def is_collated(self, value):
        return type(value) is int and abs(value) < 10**15

    def describe(self, in_xml=False):
        return {"type": "string", "pattern": r"^\s*-?[0-9]{1,13}(\.[0-9]{1,2})?\s*$"}

    def describe_stored(self):
        return {"type": "string", "pattern": r"^-?[0-9]{1,13}\.[0-9]{2}$"}


money = Money()
PRODUCTS = Schema("product", "products", {"name": text(200), "price": money},
                  filters=("price",), sorts=("name", "price"))

if __name__ == "__main__":
    sys.exit(main(collections=(PRODUCTS,)))
