"""Parsers and writers for the benchmark files we import and export.

Pure functions over plain dataclasses (no database), so importers can parse a
whole upload first and then write it in one transaction: every parser
validates every row and raises :class:`FormatError` for the first bad one.

Row numbers in :class:`FormatError` are what a person sees when opening the
file in a spreadsheet: **the header is row 1, the first data row is row 2**
(CSV records spanning several text lines still count as one row).  For JSONL
the row number is the 1-based line number (there is no header).

Formats (real files in ``shared/data``, see its README):

* VisIT-Bench single-image CSV and multi-image CSV (told apart by header);
* ConvBench ``.xlsx`` (sheet ``multi_turn_benchmark``);
* Prometheus-Vision ``.jsonl`` whose ``instruction`` holds a full rubric prompt.

Findings about the encodings are documented next to each parser.

Layout: ``common`` (FormatError, shared readers), ``visitbench``, ``convbench``,
``prometheus``. Import from the package, not the modules.
"""

from annotation.content.formats.common import FormatError, Source
from annotation.content.formats.convbench import (
    CONVBENCH_COLUMNS,
    CONVBENCH_SHEET,
    CONVBENCH_TURN_SKILLS,
    ConvBenchDataset,
    ConvBenchRecord,
    parse_convbench_xlsx,
    write_convbench_xlsx,
)
from annotation.content.formats.prometheus import (
    PROMETHEUS_TASK_DESCRIPTION,
    PrometheusRecord,
    Rubric,
    build_prometheus_prompt,
    parse_prometheus_jsonl,
    split_prometheus_prompt,
    write_prometheus_jsonl,
)
from annotation.content.formats.visitbench import (
    CAPTION_PADDING,
    MAX_IMAGES,
    VISIT_MULTI_COLUMNS,
    VISIT_SINGLE_COLUMNS,
    HumanVerification,
    ImageRef,
    VisitDataset,
    VisitFormat,
    VisitRecord,
    detect_visit_format,
    human_verification_rates,
    parse_visit_csv,
    write_visit_csv,
)

__all__ = [
    "CAPTION_PADDING",
    "CONVBENCH_COLUMNS",
    "CONVBENCH_SHEET",
    "CONVBENCH_TURN_SKILLS",
    "ConvBenchDataset",
    "ConvBenchRecord",
    "FormatError",
    "HumanVerification",
    "ImageRef",
    "MAX_IMAGES",
    "PROMETHEUS_TASK_DESCRIPTION",
    "PrometheusRecord",
    "Rubric",
    "Source",
    "VISIT_MULTI_COLUMNS",
    "VISIT_SINGLE_COLUMNS",
    "VisitDataset",
    "VisitFormat",
    "VisitRecord",
    "build_prometheus_prompt",
    "detect_visit_format",
    "human_verification_rates",
    "parse_convbench_xlsx",
    "parse_prometheus_jsonl",
    "parse_visit_csv",
    "split_prometheus_prompt",
    "write_convbench_xlsx",
    "write_prometheus_jsonl",
    "write_visit_csv",
]
