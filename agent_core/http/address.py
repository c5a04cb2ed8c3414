"""A customer's new delivery address, split into the parts a shop's API stores. Pure.

Shop APIs keep an address in fields (WooCommerce: `shipping.address_1`, `city`,
`postcode`, `country`); a customer writes one line ("7 Harbour Road, Ningbo, 315000").
Putting the whole line into `address_1` would keep the old city and postcode, and the
parcel would go to the wrong place. So a tool that declares `address_parts` (the tools
file: `address_parts = { arg = "address", country = "CN" }`) has the line split here,
and its `body` and `reconcile.match` may use `{address_1}`, `{city}`, `{postcode}` and
`{country}`.

The rule is simple on purpose, and refuses rather than guesses: the parts are separated
by commas (, or ，); a postcode (4 to 6 digits, or ZIP+4) ends the line or one of its
parts; the last part may name the country (else the tool's default); of what is left,
the last part is the city and the rest the street. Without a postcode, or with fewer
than two parts left, the address is not split (None) and the customer is asked to write
it as "street, city, postcode" before anything is confirmed or sent.
"""

from __future__ import annotations

import re
from typing import Final

ADDRESS_PARTS: Final = ("address_1", "city", "postcode", "country")

# Country names a customer may write last -> ISO 3166-1 alpha-2, as shop APIs store them.
COUNTRIES: Final = {
    "cn": "CN",
    "china": "CN",
    "prc": "CN",
    "中国": "CN",
    "中华人民共和国": "CN",
    "hk": "HK",
    "hong kong": "HK",
    "香港": "HK",
    "tw": "TW",
    "taiwan": "TW",
    "台湾": "TW",
    "sg": "SG",
    "singapore": "SG",
    "新加坡": "SG",
    "us": "US",
    "usa": "US",
    "united states": "US",
    "美国": "US",
    "uk": "GB",
    "gb": "GB",
    "united kingdom": "GB",
    "英国": "GB",
    "de": "DE",
    "germany": "DE",
    "德国": "DE",
    "fr": "FR",
    "france": "FR",
    "法国": "FR",
    "jp": "JP",
    "japan": "JP",
    "日本": "JP",
}

_SEPARATORS = re.compile(r"[,，、;；]")
_POSTCODE = re.compile(r"(?:^|\s)(\d{4,6}(?:-\d{4})?)$")


def split_address(text: str, country: str) -> dict[str, str] | None:
    """`text` as {address_1, city, postcode, country}, or None when it cannot be split
    (see the module docstring). `country` is used when the text names none."""
    parts = [" ".join(p.split()) for p in _SEPARATORS.split(text)]
    parts = [p for p in parts if p]
    if parts and parts[-1].lower() in COUNTRIES:
        country = COUNTRIES[parts.pop().lower()]
    postcode = None
    for n in range(len(parts) - 1, -1, -1):
        found = _POSTCODE.search(parts[n])
        if found is not None:
            postcode = found.group(1)
            parts[n] = parts[n][: found.start()].strip()
            if not parts[n]:
                del parts[n]
            break
    if postcode is None or len(parts) < 2:
        return None
    return {
        "address_1": ", ".join(parts[:-1]),
        "city": parts[-1],
        "postcode": postcode,
        "country": country,
    }
