"""The window page: a curve per profile with its band, the points' table, the words."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from lab.model.window import Point
from lab.report.window import curve_svg, render


def _results() -> dict:  # type: ignore[type-arg]
    d = [Point(0, 5, 5), Point(30, 2, 8), Point(100, 0, 5), Point(1000, unknown=5)]
    c = [Point(0, 0, 5), Point(30, 0, 5), Point(100, 0, 5), Point(1000, 0, 5)]
    return {
        "sweep": "refresh_delay_ms",
        "axis": "refresh delay after the answer (ms)",
        "log_x": True,
        "seed": 1,
        "fault": "none",
        "trials": 43,
        "seconds": 12.5,
        "profiles": {"defect": "fire_and_forget", "correct": "correct"},
        "curves": {"defect": [p.as_json() for p in d], "correct": [p.as_json() for p in c]},
        "window": {"defect": "loses the turn when ...", "correct": "no loss at any value tried"},
    }


def test_the_svg_is_well_formed_with_a_band_and_a_curve_per_profile() -> None:
    r = _results()
    svg = ET.fromstring(curve_svg(r["curves"], r["profiles"], r["axis"], True))
    assert {p.get("class") for p in svg.iter("polygon")} == {"band defect", "band correct"}
    assert {p.get("class") for p in svg.iter("polyline")} == {"curve defect", "curve correct"}
    # the defect's unjudged value is a gap (3 judged points drawn), marked on the axis
    defect = next(p for p in svg.iter("polyline") if p.get("class") == "curve defect")
    assert len(defect.get("points", "").split()) == 3
    assert any(t.text == "x" for t in svg.iter("text"))


def test_zero_sits_left_of_every_positive_value_on_a_log_axis() -> None:
    r = _results()
    svg = ET.fromstring(curve_svg(r["curves"], r["profiles"], r["axis"], True))
    line = next(p for p in svg.iter("polyline") if p.get("class") == "curve correct")
    xs = [float(pt.split(",")[0]) for pt in line.get("points", "").split()]
    assert xs == sorted(xs) and len(set(xs)) == 4


def test_the_page_has_the_words_the_table_and_no_script() -> None:
    page = render(_results())
    assert "loses the turn when ..." in page and "2/8 [" in page and "unknown" in page
    assert "<script" not in page


def test_the_edge_is_shaded_between_the_two_values_tried() -> None:
    r = _results()
    plain = ET.fromstring(curve_svg(r["curves"], r["profiles"], r["axis"], True))
    assert not [e for e in plain.iter("rect") if e.get("class") == "edge"]
    svg = ET.fromstring(curve_svg(r["curves"], r["profiles"], r["axis"], True, {"kind": "early", "between": [30, 100]}))
    (rect,) = [e for e in svg.iter("rect") if e.get("class") == "edge"]
    assert float(rect.get("width", "0")) > 0
