#!/usr/bin/env python3
"""The worked example of `tvie plan` (issue 13): training cards vs inference cards, computed.

Runs build/bin/tvie plan for each case below, keeps every JSON report under docs/results/plan-example/ and writes
docs/results/plan-example/worked-example.md from them (no figure typed by hand). Nothing runs on a device: the figures
are projections from the predicted ledger, the traced work and the catalog (lib/data/accelerators.json).

  scripts/plan-example.py [--tvie build/bin/tvie]
"""
import argparse
import json
import os
import pathlib
import shlex
import subprocess

root = pathlib.Path(__file__).resolve().parent.parent
results = root / "docs" / "results" / "plan-example"
H200_REPORT = "docs/results/gpu-h200/compare-gpt2-small.json"  # measured on an H200 (scripts/gpu-check.sh)
H200_DECODE = "docs/results/gpu-h200/decode-gpt2-small.json"  # tvie decode on the same H200

SERVE_CARDS = "t4,l4,a100-80gb-sxm,h100-sxm"
TRAIN_CARDS = "a100-80gb-sxm,h100-sxm"

CASES = [
    # name, what it is, arguments
    ("llama-3-8b-serve-fp16", "Llama 3 8B served in fp16, 5,000 requests/s, p99 <= 200 ms",
     f"--model llama --preset llama-3-8b --infer-dtype fp16 --cards {SERVE_CARDS} --serve-qps 5000 --p99-ms 200 --stack tvie"),
    ("llama-3-8b-serve-int8", "Llama 3 8B served in int8 (Linear layers), 5,000 requests/s, p99 <= 200 ms",
     f"--model llama --preset llama-3-8b --infer-dtype int8 --cards {SERVE_CARDS} --serve-qps 5000 --p99-ms 200 --stack tvie"),
    ("llama-3-8b-chat-fp16", "Llama 3 8B generating in fp16: prompts of 512 tokens, 256 new tokens per "
     "request, 20 requests/s, p99 <= 60 s",
     f"--model llama --preset llama-3-8b --seq 768 --prompt-tokens 512 --new-tokens 256 --infer-dtype fp16 "
     f"--cards {SERVE_CARDS} --serve-qps 20 --p99-ms 60000 --stack tvie"),
    ("llama-3-8b-chat-fp16-static", "The same generation served in static batches (`--batching static`)",
     f"--model llama --preset llama-3-8b --seq 768 --prompt-tokens 512 --new-tokens 256 --infer-dtype fp16 "
     f"--cards {SERVE_CARDS} --serve-qps 20 --p99-ms 60000 --batching static --stack tvie"),
    ("llama-3-8b-chat-fp16-calibrated", "The same generation, calibrated with gpt2-small's generation "
     "(tvie decode) measured on the H200 (Hopper)",
     f"--model llama --preset llama-3-8b --seq 768 --prompt-tokens 512 --new-tokens 256 --infer-dtype fp16 "
     f"--cards {SERVE_CARDS} --serve-qps 20 --p99-ms 60000 --from {H200_DECODE}"),
    ("mlp-large-serve-fp16", "A recommender-sized dense MLP (mlp large, 126M parameters) in fp16, "
     "5,000 requests/s, p99 <= 20 ms",
     f"--model mlp --preset large --infer-dtype fp16 --cards {SERVE_CARDS} --serve-qps 5000 --p99-ms 20 --stack tvie"),
    ("llama-3-8b-train", "Llama 3 8B trained on 1B tokens: amp-bf16, AdamW, sequences of 2048, batch 1 per "
     "card, every block checkpointed",
     f"--model llama --preset llama-3-8b --seq 2048 --batch 1 --precision amp-bf16 --checkpoint blocks "
     f"--train-tokens 1000000000 --cards {TRAIN_CARDS} --stack tvie"),
    ("llama-3-8b-train-calibrated", "The same, calibrated with gpt2-small measured on the H200 (Hopper)",
     f"--model llama --preset llama-3-8b --seq 2048 --batch 1 --precision amp-bf16 --checkpoint blocks "
     f"--train-tokens 1000000000 --cards {TRAIN_CARDS} --from {H200_REPORT}"),
]


# The tuned stack (--stack tuned): calibrated on MLPerf Inference ResNet-50 Offline per card, validated on BERT-99.
TUNED_CARDS = "t4,l4,a10,a100-40gb-pcie,a100-80gb-pcie,a100-80gb-sxm,l40s,h100-pcie,h100-sxm,h200"
# MLPerf's BERT-99 feeds SQuAD v1.1's question-passage pairs, tokenized to at most 384 tokens, and NVIDIA's TensorRT
# harness batches them at their own lengths (variable-sequence-length kernels: no padding computed). A stack that
# skips the padding does the work of the tokens that are there: the projection at the dataset's mean length. The mean
# comes from the one published figure of SQuAD v1.1's padding at 384 (Zhang, Wei, Wang, Jin, Cao, "Reducing BERT
# Computation by Padding Removal and Curriculum Learning", ISPASS 2021, https://openreview.net/forum?id=3nzKUh9a4M:
# "For SQuAD-v1.1, padding accounts for 54% of the total input tokens when the max sequence length is 384").
SQUAD_MAX_TOKENS = 384
SQUAD_PADDING_FRACTION = 0.54
SQUAD_SOURCE = ("Zhang et al., \"Reducing BERT Computation by Padding Removal and Curriculum Learning\", ISPASS 2021 "
                "(https://openreview.net/forum?id=3nzKUh9a4M)")
SQUAD_MEAN_TOKENS = round(SQUAD_MAX_TOKENS * (1 - SQUAD_PADDING_FRACTION))
TUNED_CASES = [
    ("resnet50-int8-tuned", f"--model resnet --preset resnet50 --infer-dtype int8 --stack tuned --cards {TUNED_CARDS}"),
    ("bert-large-384-int8-tuned",
     f"--model bert --preset bert-large --seq 384 --infer-dtype int8 --stack tuned --cards {TUNED_CARDS}"),
    ("bert-large-384-fp16-tuned-t4", "--model bert --preset bert-large --seq 384 --infer-dtype fp16 --stack tuned --cards t4"),
    ("bert-large-squad-mean-int8-tuned",
     f"--model bert --preset bert-large --seq {SQUAD_MEAN_TOKENS} --infer-dtype int8 --stack tuned --cards {TUNED_CARDS}"),
]
PLAN_DOC = root / "docs" / "plan.md"
BEGIN, END = "<!-- tuned-stack tables: scripts/plan-example.py -->", "<!-- end of the tuned-stack tables -->"


def published(card_id, benchmark):
    """A card's published samples/s in the catalog (lib/data/accelerators.json, the data tvie compiles in)."""
    catalog = json.loads((root / "lib" / "data" / "accelerators.json").read_text())
    card = next(c for c in catalog["cards"] if c["id"] == card_id)
    return next(r["samples_per_s"] for r in card["published"] if r["benchmark"] == benchmark)


def attention_share(report):
    """The attention's share of a forward's FLOPs in a plan's traced inference work."""
    work = report["inference_work"]
    return next(c["flops"] for c in work["by_class"] if c["class"] == "attention") / work["model_flops"]


def tuned_tables(resnet, bert, bert_mean):
    """docs/plan.md's calibration and validation table, from the plans' JSON and the catalog's published rows."""
    rows = ["| card | ResNet-50 Offline, MLPerf (samples/s) | tuned: fraction of the int8 peak | ResNet-50 projected "
            "back | BERT-99 Offline, MLPerf | BERT-large projected, every sequence 384 tokens (estimate) | "
            f"BERT-large projected at SQuAD's mean, {SQUAD_MEAN_TOKENS} tokens (estimate .. bound) | "
            "published / projected at the mean | card / H100 SXM: published, projected |",
            "|---|---|---|---|---|---|---|---|---|"]
    padded = {c["id"]: c["inference"]["samples_per_s"] for c in bert["cards"]}
    mean = {c["id"]: c["inference"]["samples_per_s"] for c in bert_mean["cards"]}
    h100_est = mean["h100-sxm"]["estimate"]
    h100_pub = published("h100-sxm", "mlperf-inference bert-99 offline")
    ratios = {}
    for c in resnet["cards"]:
        t = c["inference"]["tuned"]
        b = mean[c["id"]]
        pub = published(c["id"], "mlperf-inference bert-99 offline")
        ratios[c["id"]] = pub / b["estimate"]
        rows.append(f"| {c['id']} | {t['anchor_samples_per_s']:,.0f} | {t['compute_efficiency'] * 100:.1f}% | "
                    f"{t['anchor_projected_samples_per_s']:,.0f} | {pub:,.0f} | {padded[c['id']]['estimate']:,.0f} | "
                    f"{b['estimate']:,.0f} .. {b['bound']:,.0f} | {ratios[c['id']]:.2f} | "
                    f"{pub / h100_pub:.3g}, {b['estimate'] / h100_est:.3g} |")
    card_ratios = {c["id"]: (mean[c["id"]]["estimate"] / h100_est) /
                   (published(c["id"], "mlperf-inference bert-99 offline") / h100_pub) for c in resnet["cards"]}
    return "\n".join(rows), ratios, card_ratios


def fixed_length_table(bert_int8, bert_fp16):
    """TensorRT's demoBERT at a fixed sequence length (no padding skipped): the T4 rows the catalog has."""
    rows = ["| card | dtype | TensorRT demoBERT, seq 384, batch 128 (sequences/s) | projected at its best batch "
            "(estimate .. bound) | published / projected |", "|---|---|---|---|---|"]
    ratios = {}
    for report, dtype in ((bert_int8, "int8"), (bert_fp16, "fp16")):
        card = next(c for c in report["cards"] if c["id"] == "t4")
        pub = published("t4", f"tensorrt demo-bert bert-large seq 384 {dtype}")
        rate = card["inference"]["samples_per_s"]
        ratios[dtype] = pub / rate["estimate"]
        rows.append(f"| t4 | {dtype} | {pub:,.1f} | {rate['estimate']:,.0f} .. {rate['bound']:,.0f} (batch "
                    f"{card['inference']['best_batch']}) | {ratios[dtype]:.2f} |")
    return "\n".join(rows), ratios


def tuned_section(resnet, bert, bert_fp16, bert_mean):
    table, ratios, card_ratios = tuned_tables(resnet, bert, bert_mean)
    fixed, fixed_ratios = fixed_length_table(bert, bert_fp16)
    within = [c for c, r in ratios.items() if 1 / 1.5 <= r <= 1.5]
    outside = [f"{c} {r:.2f}" for c, r in ratios.items() if not 1 / 1.5 <= r <= 1.5]
    card_within = [c for c, r in card_ratios.items() if 1 / 1.3 <= r <= 1.3]
    card_outside = [f"{c} x{r:.2f}" for c, r in card_ratios.items() if not 1 / 1.3 <= r <= 1.3]
    share = attention_share(bert_mean)
    attention_bound = share * (SQUAD_MAX_TOKENS / SQUAD_MEAN_TOKENS - 1)
    return "\n".join([
        BEGIN, "",
        f"`tvie plan {TUNED_CASES[0][1]} --no-host` and the same for "
        f"`--model bert --preset bert-large --seq 384` and `--seq {SQUAD_MEAN_TOKENS}` "
        "([resnet50-int8-tuned.json](results/plan-example/resnet50-int8-tuned.json), "
        "[bert-large-384-int8-tuned.json](results/plan-example/bert-large-384-int8-tuned.json), "
        "[bert-large-squad-mean-int8-tuned.json](results/plan-example/bert-large-squad-mean-int8-tuned.json)); the "
        "published rates are the catalog's (`tvie cards --json`, `published`, each with its MLPerf result file).", "",
        f"MLPerf's BERT-99 harness batches SQuAD v1.1's sequences at their own lengths (TensorRT's variable-length "
        f"kernels), so the work is that of the tokens present. The mean length is the published padding: "
        f"{SQUAD_PADDING_FRACTION:.0%} of SQuAD v1.1's tokens at {SQUAD_MAX_TOKENS} are padding ({SQUAD_SOURCE}), so "
        f"a sequence holds {SQUAD_MAX_TOKENS} x {1 - SQUAD_PADDING_FRACTION:.2f} = {SQUAD_MEAN_TOKENS} tokens on "
        f"average.", "",
        table, "",
        f"BERT-99 within 1.5x of the projection at the mean length on {len(within)} of {len(ratios)} cards"
        f"{' (outside: ' + ', '.join(outside) + ')' if outside else ''}; published / projected "
        f"{min(ratios.values()):.2f} .. {max(ratios.values()):.2f}. Card to card (each card's rate over the H100 "
        f"SXM's), projected against published within 30% on {len(card_within)} of {len(card_ratios)} cards"
        f"{' (outside: ' + ', '.join(card_outside) + ')' if card_outside else ''}.", "",
        f"At the mean length the projection has the work of everything linear in the tokens (every product, "
        f"normalisation and elementwise kernel); the attention's work goes as the square of each sequence's "
        f"length, and the mean of the squares is above the square of the mean. Without the lengths' histogram the "
        f"longest sequence bounds that shortfall: none exceeds {SQUAD_MAX_TOKENS} tokens, so the attention does at "
        f"most {SQUAD_MAX_TOKENS / SQUAD_MEAN_TOKENS:.2f}x its projected work. At {SQUAD_MEAN_TOKENS} tokens it is "
        f"{share:.1%} of a forward's FLOPs, so the work left out is at most {attention_bound:.1%} of the forward's.",
        "",
        "At a fixed sequence length (TensorRT's own BERT demo, every sequence 384 tokens; the "
        "catalog's `published` rows of the T4 with the README's table and latency):", "",
        fixed, "",
        f"On the T4, MLPerf's BERT-99 rate is {published('t4', 'mlperf-inference bert-99 offline') / published('t4', 'tensorrt demo-bert bert-large seq 384 int8'):.2f}x "
        "TensorRT's fixed-length int8 rate: what batching the sequences at their own lengths buys there; the "
        f"projection at {SQUAD_MEAN_TOKENS} tokens is "
        f"{next(c for c in bert_mean['cards'] if c['id'] == 't4')['inference']['samples_per_s']['estimate'] / next(c for c in bert['cards'] if c['id'] == 't4')['inference']['samples_per_s']['estimate']:.2f}x "
        "the one at 384.", "",
        END])


def run(tvie, name, args):
    out = results / f"{name}.json"
    cmd = f"{tvie} plan {args} --no-host --quiet --json {out.relative_to(root)}"
    subprocess.run(shlex.split(cmd), cwd=root, check=True, stdout=subprocess.DEVNULL)
    return f"tvie plan {args} --no-host", json.loads(out.read_text())


def span(bound, estimate, scale=1.0, digits=3):
    return f"{bound * scale:.{digits}g} .. {estimate * scale:.{digits}g}"


def money(x):
    return "-" if x is None else f"${x:,.0f}"


def cloud(cost, digits=0):
    """The cheapest .. dearest listed on-demand price, as the report gives it (null: none listed)."""
    if cost is None:
        return "-"
    low, high = f"${cost['low']:,.{digits}f}", f"${cost['high']:,.{digits}f}"
    n = cost["listings"]
    return f"{low if low == high else low + ' .. ' + high} ({n} listing{'' if n == 1 else 's'})"


def fits_cell(card):
    """Whether batch 1 fits, with its predicted peak against the card's memory."""
    i = card["inference"]
    peak = "-" if i["peak_bytes"] is None else f"{i['peak_bytes'] / 1e9:.1f} GB"
    return f"{'yes' if i['fits'] else 'no'} ({peak} of {card['memory_gb']:g})"


def serving_cells(i):
    """The requests/s one card sustains under the bound, the cards for the rate and their power."""
    q = i["qps_per_card"]
    kw = "-" if i["power_kw"] is None else format(i["power_kw"], ".3g")
    how = (f"at most {i['serving_batch']} at once" if i["serving_batching"] == "continuous"
           else f"batches of {i['serving_batch']}")
    return [f"{span(q['estimate'], q['bound'])} ({how})", f"{i['cards_for_qps'] or '-'}", kw]


def cloud_cell(i):
    return cloud(i["usd_per_million"], 2) if i["cards_for_qps"] else "-"


def serve_table(report):
    s = report["settings"]
    rows = ["| card | fits (peak at batch 1) | largest batch | latency, batch 1 (ms) | best batch: samples/s | "
            f"requests/s per card, p99 <= {s['p99_ms']:g} ms | cards for {s['serve_qps']:,.0f}/s | kW (TDP) | "
            "hardware (list price) | cloud, per 1M requests (on demand) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for c in report["cards"]:
        i = c["inference"]
        if not i["supported"]:
            rows.append(f"| {c['id']} | {fits_cell(c)} | {i['largest_batch']} | n/a: {i['unsupported']} | | | | | | |")
            continue
        cells = [c["id"], fits_cell(c), f"{i['largest_batch']}",
                 span(i["latency"]["bound_s"], i["latency"]["estimate_s"], 1e3),
                 f"{i['best_batch']}: {span(i['samples_per_s']['estimate'], i['samples_per_s']['bound'])}",
                 *serving_cells(i), money(i["hardware_usd"]), cloud_cell(i)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def chat_table(report):
    s = report["settings"]
    rows = ["| card | fits (peak at batch 1) | largest batch | first token, batch 1 (ms) | per output token, batch 1 "
            "(ms) | request, batch 1 (s) | best batch: new tokens/s | "
            f"requests/s per card, p99 <= {s['p99_ms'] / 1e3:g} s | cards for {s['serve_qps']:,.0f}/s | kW (TDP) | "
            "cloud, per 1M requests (on demand) |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in report["cards"]:
        i = c["inference"]
        if not i["supported"] or i["largest_batch"] == 0:
            why = f"n/a: {i['unsupported']}" if not i["supported"] else "does not fit"
            rows.append(f"| {c['id']} | {fits_cell(c)} | {i['largest_batch']} | {why} | | | | | | | |")
            continue
        g = i["generation"]
        tpot = g["time_per_output_token_s"]
        cells = [c["id"], fits_cell(c), f"{i['largest_batch']}",
                 span(g["prefill"]["bound_s"], g["prefill"]["estimate_s"], 1e3), span(tpot["bound"], tpot["estimate"], 1e3),
                 span(i["latency"]["bound_s"], i["latency"]["estimate_s"]),
                 f"{i['best_batch']}: {span(g['tokens_per_s']['estimate'], g['tokens_per_s']['bound'])}",
                 *serving_cells(i), cloud_cell(i)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def corrected_term(c, mode, launches, operators, both):
    """The term a mode's calibration corrected and by how much (settings.calibration of a plan's JSON)."""
    if c[f"{mode}_work_factor"] == 1:
        return f"{launches} x{c[f'{mode}_launch_factor']:.3g}"
    if c[f"{mode}_launch_factor"] == 1:
        return f"{operators} x{c[f'{mode}_work_factor']:.3g}"
    return f"{both} x{c[f'{mode}_factor']:.3g}"


def calibration_note(c):
    """What the calibration measured and what it corrected, per mode the report had (the JSON's own figures)."""
    modes = []
    for mode, what in [("training", "training step"), ("inference", "inference batch"), ("prefill", "prefill"),
                       ("decoding", "decoding step")]:
        if not c[f"{mode}_factor"]:
            continue
        projected = c[f"{mode}_projected_s"]
        term = corrected_term(c, mode, "the kernel overhead", "the operators' time", "both")
        line = (f"{what} {c[f'{mode}_measured_s'] * 1e3:.2f} ms against {projected * 1e3:.2f} ms projected for "
                f"that card ({c[f'{mode}_launch_s'] / projected * 100:.0f}% of it kernel launches): x"
                f"{c[f'{mode}_factor']:.3g}")
        if mode == "training" and c.get("training_forward_factor"):
            # The phases timed apart calibrate training, each its own part of the projection.
            line += ", its phases calibrating training each its own part (the step's mean split as their medians): " + \
                ", ".join(f"{phase} {c[f'training_{phase}_measured_s'] * 1e3:.2f} ms against "
                          f"{c[f'training_{phase}_projected_s'] * 1e3:.2f} ms, x{c[f'training_{phase}_factor']:.3g} as "
                          + corrected_term(c, "training_" + phase, "the kernel overhead", "the operators' time", "both")
                          for phase in ("forward", "backward", "optimizer"))
        else:
            line += f", corrected as {term}"
        modes.append(line)
    source = pathlib.Path(c['source'])
    link = os.path.relpath(root / source, results)  # the report, from the worked example's folder
    return (f"Calibration: {c['workload']} measured on {c['device']} ([{source.name}]({link})); " + "; ".join(modes) + f". Applied to the {c['architecture']} "
            "cards (marked by their calibration factor in the JSON; never below the bound). The term that "
            "dominated the measured run's projection takes the difference, the other stays as projected, so a "
            "small model's launch overhead is not multiplied into a big model's weight reads (docs/plan.md, "
            "Calibration).")


def training_correction(cal, card):
    """The calibration column of the training table: per phase where the report timed them, else the step's."""
    if not card["training_calibration"]:
        return "-"
    if card.get("training_calibration_by_phase"):
        return ", ".join(f"{phase} {corrected_term(cal, 'training_' + phase, 'launches', 'operators', 'all')}"
                         for phase in ("forward", "backward", "optimizer"))
    return corrected_term(cal, "training", "launches", "operators", "all")


def train_table(report):
    s = report["settings"]
    cal = s.get("calibration")
    rows = ["| card | fits one card | cards (sharding) | step on one card (ms) | tokens/s per card | MFU assumed | "
            f"{s['train_tokens'] / 1e9:g}B tokens: hours | energy, kWh (TDP x time) | cloud, on demand | "
            "calibration |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for c in report["cards"]:
        t = c["training"]
        if not t["supported"]:
            rows.append(f"| {c['id']} | n/a: {t['unsupported']} | | | | | | | | |")
            continue
        e = t["budget_energy_kwh"]
        rows.append(
            f"| {c['id']} | {'yes' if t['fits'] else 'no'} ({t['peak_bytes'] / 1e9:.0f} GB) | {t['cards']} "
            f"({t['sharding'].split(' ')[0]}) | {span(t['step']['bound_s'], t['step']['estimate_s'], 1e3)} | "
            f"{span(t['tokens_per_s']['estimate'], t['tokens_per_s']['bound'])} | {t['mfu_estimate'] * 100:.0f}% | "
            f"{span(t['budget_hours']['bound'], t['budget_hours']['estimate'])} | "
            f"{'-' if e is None else span(e['bound'], e['estimate'])} | {cloud(t['budget_usd'])} | "
            f"{training_correction(cal, c)} |")
    return "\n".join(rows)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tvie", default="build/bin/tvie")
    p.add_argument("--check-tables", action="store_true",
                   help="only check that docs/plan.md's tuned-stack table is what the committed JSON reports give")
    a = p.parse_args()
    if a.check_tables:
        doc = PLAN_DOC.read_text()
        now = tuned_section(*(json.loads((results / f"{name}.json").read_text()) for name, _ in TUNED_CASES))
        if doc[doc.index(BEGIN):doc.index(END) + len(END)] != now:
            raise SystemExit("docs/plan.md: the tuned-stack table differs from what docs/results/plan-example/"
                             "*-tuned.json give: run scripts/plan-example.py")
        print("docs/plan.md: the tuned-stack table is current")
        return
    parts = ["# `tvie plan`, worked: training cards vs inference cards",
             "",
             "Generated by `scripts/plan-example.py` from the JSON reports beside this file (`*.json`); no "
             "figure typed by hand. **Every figure is projected, nothing ran**: the predicted ledger against each "
             "card's memory (90% usable), the traced work of one step or batch on the card's datasheet peaks and "
             "bandwidth (`tvie cards`). Times and rates are intervals: the roofline bound (every peak reached) and "
             "the estimate (the catalog's efficiency per operator class and card, and a launch overhead per "
             "kernel); rates are written estimate .. bound. Serving is projected for tvie's own LibTorch kernels "
             "(`--stack tvie`), the kernels the calibrated cases measured; `tvie plan` sizes on the tuned stack by "
             "default, as [the training-cards vs inference-cards page](../../training-cards-vs-inference-cards.md) "
             "does. How the projection works and what it leaves out: [docs/plan.md](../plan.md).",
             "",
             "A request is one forward of one sample (for Llama, a 128-token sequence: a prefill, as in ranking "
             "or embedding), except in the generation case (`--new-tokens`), where it is a prompt's forward and "
             "then one decoding step per new token, each step reading every weight and the KV cache so far (the "
             "peak holds each request's whole KV cache: no paged cache). The serving rate per card, requests "
             "arriving as a Poisson stream: for requests of one forward, static batches (a batch waits for its "
             "last request; an M/D/1 queue of batches at the projected service time); for generation, continuous "
             "batching as serving engines schedule it (requests join between decoding steps after their "
             "prompts' forward and leave with their last token, at most the memory's largest batch at once; "
             "simulated on the projected times), or static batches with `--batching static` (docs/plan.md, "
             "\"Serving\").",
             ""]
    for name, what, args in CASES:
        cmd, report = run(a.tvie, name, args)
        parts += [f"## {what}", "", f"`{cmd}` ([{name}.json]({name}.json))", ""]
        c = report["settings"].get("calibration")
        if c:
            parts += [calibration_note(c), ""]
        if "chat" in name and c:
            parts += [chat_table(report), ""]
        elif "static" in name:
            parts += [chat_table(report), "",
                      "Static batches: a batch waits for its last request and generates to the end, so under the "
                      "same p99 bound a card sustains far fewer requests than with continuous batching above, and "
                      "a slow card most of all (the L4 takes its requests one at a time: a second one would wait "
                      "for the first's whole generation).", ""]
        elif "chat" in name:
            parts += [chat_table(report), "",
                      "A decoding step reads every weight (and the cache so far) to make one token per request: at "
                      "batch 1 the time per output token is the weights' bytes over the card's bandwidth, and the "
                      "batch is what buys throughput, until the requests' KV caches fill the memory (the largest "
                      "batch). The requests/s under the p99 bound are continuous batching's: the requests decoding "
                      "at once share every step, a new one joins after its prompt's forward, and nobody waits for "
                      "a batch to fill or to finish.", ""]
        elif "serve" in name:
            note = report["cards"][0]["inference"]["peak_note"]
            parts += [serve_table(report), ""]
            if note:
                parts += [f"Memory with int8: {note}.", ""]
        else:
            parts += [train_table(report), ""]
    parts += ["Hardware prices are the catalog's dated list prices where it has one (`-`: none there). Cloud costs "
              "price the cards at the cheapest and at the dearest on-demand listing the catalog has for the card "
              "(per vendor, the most recent, with its date: `tvie cards --json`; from Epoch AI's dated price table), "
              "for the estimated time: training, cards x hours for the budget; serving, the cards for the rate "
              "during the hours a million requests take. List prices on the dates given; reserved, spot and "
              "negotiated prices are lower.", ""]
    (results / "worked-example.md").write_text("\n".join(parts))
    print(f"wrote {(results / 'worked-example.md').relative_to(root)}")
    tuned = [run(a.tvie, name, args)[1] for name, args in TUNED_CASES]
    doc = PLAN_DOC.read_text()
    PLAN_DOC.write_text(doc[:doc.index(BEGIN)] + tuned_section(*tuned) + doc[doc.index(END) + len(END):])
    print(f"wrote the tuned-stack table in {PLAN_DOC.relative_to(root)}")


if __name__ == "__main__":
    main()
