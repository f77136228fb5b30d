"""micro_speech end to end on firmware (issue 19): every wav clip of the example's
testdata through the int8 audio preprocessor's stream image (one emulator run per clip)
and, for one-second clips, the keyword model's image; each clip's features, scores and
label compared exactly with TFLite Micro's pipeline (toolchain/testing/micro_speech.py).

Records the figures of both images: instructions per frame (the clip's last frame, the
preprocessor's integer graph having no data-dependent path) and per keyword inference,
flash and RAM by component (the preprocessor's state region included) from the size
report. Writes bench/results/micro_speech.{json,md}; exits 1 if any clip differs.

    python bench/micro_speech.py [--board cortex-m4]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolchain.report.size import size_report  # noqa: E402
from toolchain.testing.micro_speech import (  # noqa: E402
    EXPECTED_LABELS,
    KEYWORD_MODEL,
    MICRO_SPEECH,
    PREPROCESSOR,
    TESTDATA,
    build_firmware,
    label,
    read_wav,
    run_clip,
    tflm_features,
    tflm_scores,
)

RESULTS = ROOT / "bench" / "results"


def clip_row(firmware, clip: Path) -> dict:
    """One clip through both pipelines: exactness, label and instruction counts."""
    audio = read_wav(clip)
    run = run_clip(firmware, audio)
    want = tflm_features(PREPROCESSOR, audio)
    row = {"clip": clip.name, "frames": len(want),
           "features_exact": bool(run.features.shape == want.shape
                                  and np.array_equal(run.features, want)),
           "frame_instructions": run.frame_instructions,
           "keyword_instructions": run.keyword_instructions}
    if run.scores is not None:
        scores = tflm_scores(KEYWORD_MODEL, want)
        row.update(scores=run.scores.reshape(-1).tolist(),
                   scores_exact=bool(np.array_equal(run.scores, scores)),
                   label=label(run.scores), tflm_label=label(scores),
                   expected_label=EXPECTED_LABELS.get(clip.name))
    return row


def image_row(build) -> dict:
    """Flash and RAM by component of one image (the components that hold a byte)."""
    report = size_report(build)
    return {"flash_total": report.flash_total,
            "flash": {k: v for k, v in report.flash.items() if v},
            "ram_total": sum(report.ram.values()),
            "ram": {k: v for k, v in report.ram.items() if v}}


def markdown(result: dict) -> str:
    lines = ["# micro_speech end to end on firmware", "",
             f"Written by `python bench/micro_speech.py --board {result['board']}`: every "
             "clip of the example's testdata through the int8 preprocessor's stream image "
             "(one emulator run per clip) and the keyword model's image, against TFLite "
             "Micro's pipeline (one interpreter per clip).", "",
             "| clip | frames | features exact | scores | exact | label (TFLite Micro, expected) "
             "| instr./frame | instr./keyword |", "|---|---:|---|---|---|---|---:|---:|"]
    for r in result["clips"]:
        scores = " ".join(str(s) for s in r.get("scores", [])) or "-"
        lab = (f"{r['label']} ({r['tflm_label']}, {r['expected_label']})"
               if "label" in r else "-")
        kw = f"{r['keyword_instructions']:,}" if r["keyword_instructions"] else "-"
        lines.append(f"| {r['clip']} | {r['frames']} | {r['features_exact']} | {scores} | "
                     f"{r.get('scores_exact', '-')} | {lab} | {r['frame_instructions']:,} | "
                     f"{kw} |")
    lines += ["", "| image | flash (B) | RAM (B) | RAM by component |", "|---|---:|---:|---|"]
    for name, img in result["images"].items():
        ram = ", ".join(f"{k} {v:,}" for k, v in img["ram"].items())
        lines.append(f"| {name} | {img['flash_total']:,} | {img['ram_total']:,} | {ram} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="cortex-m4")
    args = parser.parse_args(argv)
    if not MICRO_SPEECH.is_dir():
        print(f"micro_speech: {MICRO_SPEECH} is absent", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        firmware = build_firmware(args.board, Path(tmp))
        clips = [clip_row(firmware, p) for p in sorted(TESTDATA.glob("*.wav"))]
        images = {"preprocessor": image_row(firmware.preprocessor),
                  "keyword": image_row(firmware.keyword)}
    result = {"board": args.board, "clips": clips, "images": images}
    stem = "micro_speech" if args.board == "cortex-m4" else f"micro_speech-{args.board}"
    (RESULTS / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    (RESULTS / f"{stem}.md").write_text(markdown(result))
    print(markdown(result))
    ok = all(r["features_exact"] and r.get("scores_exact", True)
             and r.get("label") == r.get("tflm_label") for r in clips)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
