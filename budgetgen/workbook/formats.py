"""Cell formats, created once per workbook and shared by every sheet."""

from __future__ import annotations

import math

from ..core.i18n import tr

CURRENCY_SYMBOL = {"CNY": "¥", "USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "INR": "₹", "KRW": "₩"}


class Formats:
    """Cell formats, created once per workbook and reused."""

    def __init__(self, wb, currency: str, lang: str = "en"):
        symbol = CURRENCY_SYMBOL.get(currency)
        money = f'"{symbol}"#,##0' if symbol else f'#,##0 "{currency}"'
        price = f'"{symbol}"#,##0.00' if symbol else f'#,##0.00 "{currency}"'
        base = {"font_name": "Calibri", "font_size": 10}
        self._wb = wb
        self._cache: dict[tuple, object] = {}
        self.base = base
        self.num = {"number": "#,##0.00", "int": "#,##0", "money": money, "price": price, "percent": "0.0%",
                    "sci": "0.00E+00", "text": "@", "general": "General", "flag": "General",
                    "wrap": "General", "echo": "[<1000]General;#,##0", "rate": "0.0000",
                    "bool": '"{0}";"{0}";"{1}"'.format(tr("TRUE", lang), tr("FALSE", lang))}
        self.header = wb.add_format({**base, "bold": True, "bg_color": "#1F3864", "font_color": "#FFFFFF",
                                     "text_wrap": True, "valign": "top", "border": 1})
        self.title = wb.add_format({**base, "bold": True, "font_size": 14})
        self.title_wrap = wb.add_format({**base, "bold": True, "font_size": 14, "text_wrap": True, "valign": "top"})
        self.bold = wb.add_format({**base, "bold": True})
        self.note = wb.add_format({**base, "italic": True, "font_color": "#595959"})
        self.note_wrap = wb.add_format({**base, "italic": True, "font_color": "#595959", "text_wrap": True,
                                        "valign": "top"})
        self.wrap = wb.add_format({**base, "text_wrap": True, "valign": "top"})
        self.alarm = wb.add_format({**base, "bold": True, "font_color": "#FFFFFF", "bg_color": "#C00000"})
        self.warn = wb.add_format({**base, "font_color": "#9C5700", "bg_color": "#FFEB9C"})

    def get(self, role: str, fmt: str = "general"):
        """role: input (blue on light yellow), calc (black), link (green), total (bold calc)."""
        key = (role, fmt)
        if key not in self._cache:
            props = {**self.base, "num_format": self.num.get(fmt, fmt)}
            if fmt == "wrap":
                props.update(text_wrap=True, valign="top")
            if role == "input":
                props.update(font_color="#0000FF", bg_color="#FFF2CC", locked=False)
            elif role == "link":
                props.update(font_color="#00803C")
            elif role == "total":
                props.update(bold=True, top=1)
            self._cache[key] = self._wb.add_format(props)
        return self._cache[key]


def cached(value):
    """A Python result as a formula's cached value: None is the sheet's empty string."""
    if value is None:
        return ""
    if value.__class__ is float and not math.isfinite(value):
        return "#NUM!"
    return value
