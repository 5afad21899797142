"""Pictures for the demo, drawn with Pillow from a seed, each with the facts it shows.

The demo's instructions and answers are written from these facts, so what a text says about a
picture can be checked against what was drawn (``tests/agreement/test_demo_truth.py`` redraws
every demo image from its kind and seed and compares bytes and facts). Same seed, same bytes.
No Django here: the generator is plain Pillow.

Kinds: ``shapes`` (circles, squares, triangles in a few colours, no overlap, each colour used a
different number of times), ``squares`` (the same, squares only), ``changed`` (a ``shapes``
picture with one shape recoloured: the second image of a spot-the-difference pair), ``bars``
(a bar chart with distinct values written above the bars) and ``scene`` (a house with a door, a
sun and some trees).
"""
from __future__ import annotations

import io
import random
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

WIDTH, HEIGHT = 640, 420
BACKGROUND = (248, 248, 244)
COLOURS = {"red": (205, 40, 40), "blue": (40, 80, 205), "green": (40, 150, 70),
           "yellow": (232, 192, 30), "purple": (130, 60, 170)}
SHAPES = ("circle", "square", "triangle")
COLUMNS, ROWS = 4, 3  # shapes sit one per cell of this grid, so they never overlap
ROW_NAMES = ("top", "middle", "bottom")
BAR_LABELS = ("apples", "pears", "plums", "figs", "limes", "kiwis")
WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve")


@dataclass(frozen=True)
class Picture:
    kind: str
    seed: int
    png: bytes
    facts: dict


def picture(kind: str, seed: int) -> Picture:
    """The picture of ``kind`` for ``seed`` (what the truth test calls to redraw one)."""
    draw = {"shapes": shapes, "squares": squares, "changed": changed, "bars": bars,
            "scene": scene}[kind]
    return draw(seed)


def _png(img: Image.Image) -> bytes:
    out = io.BytesIO()
    img.save(out, "PNG", optimize=False)
    return out.getvalue()


def _canvas() -> tuple[Image.Image, ImageDraw.ImageDraw]:
    img = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUND)
    return img, ImageDraw.Draw(img)


def _layout(seed: int, kinds: tuple[str, ...]) -> list[dict]:
    """Shapes in reading order; each colour is used a different number of times (so "which
    colour appears most often" has one answer)."""
    rnd = random.Random(seed)
    colours = rnd.sample(sorted(COLOURS), rnd.randint(2, 3))
    counts = rnd.sample([1, 2, 3, 4], len(colours))
    cells = sorted(rnd.sample([(c, r) for r in range(ROWS) for c in range(COLUMNS)],
                              sum(counts)), key=lambda cell: (cell[1], cell[0]))
    fills = [colour for colour, n in zip(colours, counts, strict=True) for _ in range(n)]
    rnd.shuffle(fills)
    return [{"shape": rnd.choice(kinds), "colour": colour, "column": col, "row": row}
            for (col, row), colour in zip(cells, fills, strict=True)]


def _draw_shapes(draw: ImageDraw.ImageDraw, items: list[dict]) -> None:
    cell_w, cell_h = WIDTH // COLUMNS, HEIGHT // ROWS
    for item in items:
        cx = item["column"] * cell_w + cell_w // 2
        cy = item["row"] * cell_h + cell_h // 2
        r, fill = 48, COLOURS[item["colour"]]
        if item["shape"] == "circle":
            draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fill)
        elif item["shape"] == "square":
            draw.rectangle([cx - r, cy - r, cx + r, cy + r], fill=fill)
        else:
            draw.polygon([(cx, cy - r), (cx + r, cy + r), (cx - r, cy + r)], fill=fill)


def _shapes_picture(kind: str, seed: int, items: list[dict], **extra) -> Picture:
    img, draw = _canvas()
    _draw_shapes(draw, items)
    return Picture(kind, seed, _png(img), {"shapes": items, **extra})


def shapes(seed: int) -> Picture:
    return _shapes_picture("shapes", seed, _layout(seed, SHAPES))


def squares(seed: int) -> Picture:
    return _shapes_picture("squares", seed, _layout(seed, ("square",)))


def changed(seed: int) -> Picture:
    """``shapes(seed)`` with one shape painted a colour the picture does not use yet."""
    items = [dict(item) for item in _layout(seed, SHAPES)]
    rnd = random.Random(seed * 7919 + 1)
    index = rnd.randrange(len(items))
    unused = sorted(set(COLOURS) - {i["colour"] for i in items})
    before = items[index]["colour"]
    items[index]["colour"] = rnd.choice(unused)
    return _shapes_picture("changed", seed, items,
                           change={"index": index, "from": before, "to": items[index]["colour"]})


def bars(seed: int) -> Picture:
    """A bar chart of distinct whole values (2–9), each written above its bar."""
    rnd = random.Random(seed)
    labels = rnd.sample(BAR_LABELS, rnd.randint(4, 5))
    values = rnd.sample(range(2, 10), len(labels))
    img, draw = _canvas()
    font = ImageFont.load_default()
    base, unit, width = 370, 36, 70
    draw.line([40, base, WIDTH - 30, base], fill=(60, 60, 60), width=2)
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        x = 70 + i * 110
        draw.rectangle([x, base - value * unit, x + width, base], fill=COLOURS["blue"])
        draw.text((x + width // 2 - 4, base - value * unit - 16), str(value), fill=(20, 20, 20),
                  font=font)
        draw.text((x + 10, base + 10), label, fill=(20, 20, 20), font=font)
    return Picture("bars", seed, _png(img), {"labels": labels, "values": values,
                                             "colour": "blue"})


def scene(seed: int) -> Picture:
    """A house (wall and door of different colours, brown roof) on grass, a sun in one upper
    corner, and 1–4 trees under the sun, on the side away from the house."""
    rnd = random.Random(seed)
    wall, door = rnd.sample(["red", "blue", "yellow", "purple"], 2)
    sun_side = rnd.choice(["left", "right"])
    trees = rnd.randint(1, 4)
    img, draw = _canvas()
    draw.rectangle([0, 0, WIDTH, 280], fill=(200, 225, 245))
    draw.rectangle([0, 280, WIDTH, HEIGHT], fill=(150, 200, 120))
    sun_x = 70 if sun_side == "left" else WIDTH - 70
    draw.ellipse([sun_x - 35, 35, sun_x + 35, 105], fill=COLOURS["yellow"])
    house_x = WIDTH - 260 if sun_side == "left" else 60  # the house sits away from the sun
    draw.rectangle([house_x, 180, house_x + 200, 320], fill=COLOURS[wall])
    draw.polygon([(house_x - 15, 180), (house_x + 100, 110), (house_x + 215, 180)],
                 fill=(120, 70, 40))
    draw.rectangle([house_x + 80, 250, house_x + 120, 320], fill=COLOURS[door])
    for i in range(trees):  # from the sun's edge of the picture towards the house
        x = 40 + i * 65 if sun_side == "left" else WIDTH - 92 - i * 65
        draw.rectangle([x + 20, 270, x + 32, 330], fill=(110, 70, 30))
        draw.ellipse([x, 215, x + 52, 280], fill=COLOURS["green"])
    return Picture("scene", seed, _png(img), {"wall": wall, "door": door, "roof": "brown",
                                              "sun": sun_side, "trees": trees})


# ------------------------------------------------------------------ reading the facts


def colour_counts(facts: dict) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in facts["shapes"]:
        counts[item["colour"]] = counts.get(item["colour"], 0) + 1
    return counts


def shape_counts(facts: dict) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in facts["shapes"]:
        counts[item["shape"]] = counts.get(item["shape"], 0) + 1
    return counts


def n_of(n: int, noun: str) -> str:
    """'one circle', 'three circles'."""
    return f"{WORDS[n]} {noun}{'' if n == 1 else 's'}"


def position(item: dict) -> str:
    """Where a shape sits, in words: "the top row, second from the left"."""
    order = ("first", "second", "third", "fourth")[item["column"]]
    return f"the {ROW_NAMES[item['row']]} row, {order} from the left"


def caption(kind: str, facts: dict) -> str:
    """A dense, true description of the picture (what a careful captioner would write)."""
    if kind in ("shapes", "squares", "changed"):
        parts = [f"a {item['colour']} {item['shape']} in {position(item)}"
                 for item in facts["shapes"]]
        return (f"An off-white picture with {n_of(len(parts), 'flat shape')} on a four-by-three "
                f"grid, none touching: {'; '.join(parts)}.")
    if kind == "bars":
        bars_text = ", ".join(f"{label} {value}" for label, value in
                              zip(facts["labels"], facts["values"], strict=True))
        return (f"A bar chart with {WORDS[len(facts['labels'])]} {facts['colour']} bars, values "
                f"written above them, from left to right: {bars_text}.")
    return (f"A {facts['wall']} house with a {facts['door']} door and a {facts['roof']} roof "
            f"stands on grass under a pale sky. A yellow sun is in the top {facts['sun']} "
            f"corner, above {n_of(facts['trees'], 'tree')} on that side.")
