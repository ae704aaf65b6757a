#!/usr/bin/env python3
"""docs/training-cards-vs-inference-cards.md: the same models trained and served on inference cards (T4, L4) and on
training cards (A100, H100, H200, MI300X), computed.

Runs build/bin/tvie plan for each case below, keeps each JSON report under docs/results/plan-example/ (cards-*.json:
the worked example's test remakes every plan there and fails when a figure moved) and writes the page from them: no
figure typed by hand. Serving is projected on the tuned stack (`--stack tuned`, docs/plan.md), training on tvie's
own kernels with the catalog's efficiencies. Nothing runs on a device.

  scripts/cards-page.py [--tvie build/bin/tvie]   # run the plans, write the page
  scripts/cards-page.py --check                    # the page against the committed reports (a test runs this)
"""
import argparse
import json
import pathlib
import shlex
import subprocess

root = pathlib.Path(__file__).resolve().parent.parent
results = root / "docs" / "results" / "plan-example"
PAGE = root / "docs" / "training-cards-vs-inference-cards.md"
CARDS = "t4,l4,a100-80gb-sxm,h100-sxm,h200,mi300x"
INFERENCE_CARDS, TRAINING_CARD = ("t4", "l4"), "a100-80gb-sxm"
QPS = 5000  # the seeds' serving target

CASES = [
    # name, title, what a request is, arguments
    ("cards-bert-large-128", "BERT-large, sequences of 128 tokens",
     "a request is one sequence of 128 tokens (ranking, classification, embedding); trained with amp-fp16, AdamW, "
     "32 sequences per card, on a budget of 1B tokens",
     f"--model bert --preset bert-large --seq 128 --batch 32 --precision amp-fp16 --infer-dtype int8 --stack tuned "
     f"--serve-qps {QPS} --p99-ms 100 --train-tokens 1e9 --cards {CARDS}"),
    ("cards-resnet50", "ResNet-50, images of 224 x 224",
     "a request is one image; trained with amp-fp16, SGD, 256 images per card, on a budget of 90 epochs of "
     "ImageNet-1k (115,305,030 images)",
     f"--model resnet --preset resnet50 --batch 256 --precision amp-fp16 --optimizer sgd --infer-dtype int8 "
     f"--stack tuned --serve-qps {QPS} --p99-ms 50 --train-samples 115305030 --cards {CARDS}"),
    ("cards-llama-3-8b-chat", "Llama 3 8B generating",
     "a request is a prompt of 512 tokens and 128 new tokens, served in int8 with continuous batching at 20 "
     "requests/s; trained with amp-bf16, AdamW, one sequence of 640 tokens per card, every block checkpointed, on a "
     "budget of 1B tokens",
     "--model llama --preset llama-3-8b --seq 640 --prompt-tokens 512 --new-tokens 128 --batch 1 --precision "
     "amp-bf16 --checkpoint blocks --infer-dtype int8 --stack tuned --serve-qps 20 --p99-ms 30000 "
     f"--train-tokens 1e9 --cards {CARDS}"),
]


def run(tvie, name, args):
    out = results / f"{name}.json"
    cmd = f"{tvie} plan {args} --no-host --quiet --json {out.relative_to(root)}"
    subprocess.run(shlex.split(cmd), cwd=root, check=True, stdout=subprocess.DEVNULL)


def number(x):
    """Three significant figures, written out (2,330 rather than 2.33e+03)."""
    if x >= 100:
        return f"{float(f'{x:.3g}'):,.0f}"
    return f"{x:.3g}"


def span(a, b):
    return f"{number(a)} .. {number(b)}"


def cloud(cost, digits=0):
    if cost is None:
        return "-"
    low, high = f"${cost['low']:,.{digits}f}", f"${cost['high']:,.{digits}f}"
    return low if low == high else f"{low} .. {high}"


def gb(x):
    return "-" if x is None else f"{x / 1e9:.1f} GB"


def training_cell(t):
    if not t["supported"]:
        return ["n/a: " + t["unsupported"], "", "", ""]
    if not t["cards"]:
        return [f"no: {gb(t['peak_bytes'])} on one card, no sharding enough", "", "", ""]
    fits = f"{'yes' if t['fits'] else 'no'}, {gb(t['peak_bytes'])}"
    if t["cards"] > 1:
        fits += f"; {t['cards']} cards ({t['sharding'].split(' ')[0]})"
    e = t["budget_energy_kwh"]
    return [fits, span(t["budget_hours"]["bound"], t["budget_hours"]["estimate"]),
            "-" if e is None else span(e["bound"], e["estimate"]), cloud(t["budget_usd"])]


def serving_cell(i, rate):
    if not i["supported"]:
        return ["n/a: " + i["unsupported"], "", "", "", "", ""]
    if not i["largest_batch"]:
        return [f"does not fit ({gb(i['peak_bytes'])})", "", "", "", "", ""]
    q = i["qps_per_card"]
    kw = "-" if i["power_kw"] is None else f"{i['power_kw']:.3g}"
    hw = "-" if i["hardware_usd"] is None else f"${i['hardware_usd']:,.0f}"
    cards = i["cards_for_qps"] or "none enough"
    return [f"{'yes' if i['fits'] else 'no'}, {gb(i['peak_bytes'])}", span(q["estimate"], q["bound"]), f"{cards}",
            kw, hw, cloud(i["usd_per_million"], 2) if i["cards_for_qps"] else "-"]


def table(report):
    s = report["settings"]
    rate, p99 = s["serve_qps"], s["p99_ms"]
    budget = (f"{s['train_tokens'] / 1e9:g}B tokens" if s["train_tokens"] else f"{s['train_samples']:,} samples")
    rows = ["| card | memory | train: fits (peak per card) | train: hours for " + budget + " | kWh (TDP x time) | "
            "cloud $ (on demand) | serve: fits (peak at batch 1) | requests/s per card, p99 <= "
            f"{p99 / 1e3:g} s | cards for {rate:,.0f}/s | kW (TDP) | hardware $ (list) | cloud $ per 1M requests |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in report["cards"]:
        rows.append("| " + " | ".join([c["id"], f"{c['memory_gb']:g} GB", *training_cell(c["training"]),
                                        *serving_cell(c["inference"], rate)]) + " |")
    return "\n".join(rows)


def seeds_claim(report):
    """The seeds' claim, checked on this model: inference cards serving the rate against the training card."""
    cards = {c["id"]: c["inference"] for c in report["cards"]}
    big = cards[TRAINING_CARD]
    if not big["supported"] or not big["cards_for_qps"]:
        return f"The {TRAINING_CARD} does not serve this rate here: no comparison."
    out = []
    for small_id in INFERENCE_CARDS:
        small = cards[small_id]
        if not small["supported"] or not small["cards_for_qps"]:
            out.append(f"{small_id}: does not serve this model under the bound, at any count.")
            continue
        n, m = small["cards_for_qps"], big["cards_for_qps"]
        power = 1 - small["power_kw"] / big["power_kw"]
        line = (f"{small_id}: {n} card{'s' if n > 1 else ''} against {m} {TRAINING_CARD}; {small['power_kw']:.3g} kW against "
                f"{big['power_kw']:.3g} kW ({abs(power) * 100:.0f}% {'less' if power >= 0 else 'more'} power)")
        sc, bc = small["usd_per_million"], big["usd_per_million"]
        if sc and bc:
            cost = 1 - sc["low"] / bc["low"]
            line += (f"; at the cheapest listed cloud prices ${sc['low']:.3g} against ${bc['low']:.3g} per million "
                     f"requests ({abs(cost) * 100:.0f}% {'less' if cost >= 0 else 'more'})")
        if small["hardware_usd"] is None:
            line += "; hardware cost: the catalog has no purchase price for the " + small_id
        out.append(line + ".")
    return "\n".join(f"- {line}" for line in out)


def page():
    parts = [
        "# Training cards vs inference cards",
        "",
        "Generated by `scripts/cards-page.py` from the `tvie plan` reports it names (docs/results/plan-example/"
        "cards-*.json); no figure typed by hand, and a test fails when the page and the reports disagree or a "
        "report is no longer what `tvie plan` computes. **Every figure is projected; nothing ran.** Training is "
        "projected for tvie's own LibTorch kernels at the catalog's efficiencies; serving on the tuned stack "
        "(`--stack tuned`: TensorRT-class kernels, each card calibrated on its MLPerf ResNet-50 result), which a card "
        "without such a result in the catalog (the MI300X) cannot be projected on. Times and rates are intervals: "
        "bound (every peak reached) .. estimate; rates estimate .. bound; energy is TDP x time, an upper bound; cloud "
        "costs at the cheapest .. dearest on-demand listing the catalog has, hardware at its list price where it "
        "has one. How each figure is made: [plan.md](plan.md).",
        "",
        f"The seeds' claim: 100 T4s serve {QPS:,} requests/s for 60% less hardware cost and 75% less power than "
        "A100s. Below, for each model, what the projection says of the inference cards (T4, L4) against the "
        f"{TRAINING_CARD} at that rate.",
        ""]
    for name, title, what, args in CASES:
        report = json.loads((results / f"{name}.json").read_text())
        parts += [f"## {title}", "", f"{what[0].upper()}{what[1:]}. `tvie plan {args} --no-host` "
                  f"([{name}.json](results/plan-example/{name}.json)).", "", table(report), "", seeds_claim(report),
                  ""]
    parts += ["What the tables leave out: serving memory is tvie's predicted ledger of its own inference copy (for "
              "int8 convolution nets an upper bound); every BERT sequence is projected at `--seq`, as a stack that pads "
              "runs it (one that skips the padding, as MLPerf's BERT harness does, is planned at the requests' mean "
              "length: [plan.md](plan.md)); training on the inference cards uses their 16-bit matrix units with "
              "tvie's kernels, as a researcher's LibTorch run would. Power is each card's TDP, not its draw.", ""]
    return "\n".join(parts)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tvie", default="build/bin/tvie")
    p.add_argument("--check", action="store_true", help="compare the page with the committed reports only")
    a = p.parse_args()
    if a.check:
        if PAGE.read_text() != page():
            raise SystemExit(f"{PAGE.relative_to(root)} differs from what the committed reports give: run "
                             "scripts/cards-page.py")
        print(f"{PAGE.relative_to(root)} is current")
        return
    for name, _, _, args in CASES:
        run(a.tvie, name, args)
    PAGE.write_text(page())
    print(f"wrote {PAGE.relative_to(root)}")


if __name__ == "__main__":
    main()
