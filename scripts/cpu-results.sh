#!/usr/bin/env bash
# Regenerates the CPU results quoted in README.md into docs/results/cpu-KIND/, KIND the kind of CPU it runs on
# (scripts/common.sh, cpu_kind; every figure there comes from here).
# Usage: scripts/cpu-results.sh [all|inference|aoti|decode-dtypes|accuracy|dist|max-batch|slices|plan|plan-bound|calibration]   (a group: only those results)
# Every result names the commit it was made at: the script refuses to run on a tree with uncommitted changes
# (docs/results/ and README.md aside, which it rewrites itself).
set -euo pipefail
group="${1:-all}"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
require_committed_tree scripts/cpu-results.sh docs/results README.md
commit="$(git -C "$TVIE_ROOT" rev-parse --short=12 HEAD)"
"$TVIE_ROOT/scripts/build.sh"
out="$(cpu_results_dir)"
mkdir -p "$out"
flags="$(grep -m1 '^flags' /proc/cpuinfo || true)"
isa=""
for f in avx2 avx512f avx512_bf16 amx_bf16; do case " $flags " in *" $f "*) isa="$isa $f";; esac; done
machine="$(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores (${isa# }); $(date -u +%F)"
bin="$TVIE_BUILD_DIR/bin"
run() {  # run NAME COMMAND...: stdout to docs/results/cpu-KIND/NAME.txt with a header naming the machine, commit and command
  local name="$1"; shift
  { echo "# machine: $machine"; echo "# commit: $commit"; echo "# command: ${*/#$TVIE_ROOT\//}"; "$@"; } >"$out/$name.txt"
}
if [ "$group" = all ]; then
# The demo's comparison (scripts/demo.sh on a CPU): the inference dtype the CPU runs natively (--infer-dtype auto).
for model in mlp cnn gpt; do
  run "compare-$model-tiny" "$bin/tvie" compare --model "$model" --preset tiny --batch 8 --steps 20 --warmup 3 \
      --optimizer adamw --device cpu --quiet --json "$out/compare-$model-tiny.json"
done
run "compare-gpt-small" "$bin/tvie" compare --model gpt --preset small --batch 8 --steps 10 --warmup 2 \
    --optimizer adamw --device cpu --infer-dtype bf16 --quiet --json "$out/compare-gpt-small.json"
run "compare-gpt-small-fp32" "$bin/tvie" compare --model gpt --preset small --batch 8 --steps 10 --warmup 2 \
    --optimizer adamw --device cpu --infer-dtype fp32 --quiet --json "$out/compare-gpt-small-fp32.json"
run "bench-overhead" "$bin/bench_overhead"

# The training path on gpt tiny: fp32, amp-bf16, pure bf16, and activation checkpointing (README's table).
for variant in "fp32 none" "amp-bf16 none" "bf16 none" "fp32 blocks" "amp-bf16 blocks"; do
  set -- $variant
  run "train-gpt-tiny-$1-ckpt-$2" "$bin/tvie" train --model gpt --preset tiny --batch 16 --steps 30 --warmup 3 \
      --lr 3e-3 --precision "$1" --checkpoint "$2" --device cpu --quiet \
      --json "$out/train-gpt-tiny-$1-ckpt-$2.json"
done
# The learning run: the copy task solved (loss curve in the file).
run "train-gpt-tiny-learning" "$bin/tvie" train --model gpt --preset tiny --batch 16 --steps 300 --warmup 0 \
    --lr 3e-3 --clip 1.0 --device cpu --quiet --json "$out/train-gpt-tiny-learning.json"
python3 - "$out" >"$out/train-gpt-tiny-learning-loss.md" <<'PY'
import json, math, sys, os
t = json.load(open(os.path.join(sys.argv[1], "train-gpt-tiny-learning.json")))["training"]
print(f"A run of {t['optimizer_steps']} steps on this CPU takes the copy-task loss from {t['loss']['first']:.3f} "
      f"(step 1; a uniform guess over 256 tokens scores ln 256 = {math.log(256):.3f}) to {t['loss']['final']:.3f} "
      f"(step {t['optimizer_steps']}).")
PY
# A serving load: Poisson arrivals at 50 QPS through the dynamic batcher.
run "serve-gpt-tiny-server" "$bin/tvie" serve --model gpt --preset tiny --scenario server --qps 50 --max-batch 16 \
    --max-queue-delay-us 2000 --device cpu --quiet --json "$out/serve-gpt-tiny-server.json"
# KV-cached decoding.
run "decode-gpt-small" "$bin/tvie" decode --preset small --batch 4 --prompt 64 --new-tokens 64 --repetitions 3 \
    --device cpu --quiet
# Llama 3.2 1B at its real width: grouped-query attention caches 8 key/value heads of its 32.
run "decode-llama-3.2-1b" "$bin/tvie" decode --model llama --preset llama-3.2-1b --batch 1 --prompt 64 \
    --new-tokens 32 --repetitions 2 --dtype bf16 --device cpu --quiet
# The table README shows, made from the JSON reports above.
python3 - "$out" >"$out/train-gpt-tiny-table.md" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
def mib(b): return f"{b / 2**20:.2f}"
rows = []
for precision, ckpt in [("fp32", "none"), ("amp-bf16", "none"), ("bf16", "none"), ("fp32", "blocks"), ("amp-bf16", "blocks")]:
    j = json.load(open(os.path.join(out, f"train-gpt-tiny-{precision}-ckpt-{ckpt}.json")))
    t = j["training"]; m = t["memory"]
    rows.append(f"| {precision} | {ckpt} | {mib(m['parameters'])} | {mib(m['gradients'])} | {mib(m['optimizer_state'])} | "
                f"{mib(m['weight_copies'])} | {mib(m['activations'])} | {mib(m['other'])} | {mib(m['peak'])} | "
                f"{t['step_ms']['p50']:.2f} | {t['phases']['forward']['p50_ms']:.2f} | {t['phases']['backward']['p50_ms']:.2f} | "
                f"{t['loss']['final']:.3f} |")
print("| precision | checkpoint | parameters MiB | gradients MiB | optimizer state MiB | weight copies MiB | activations MiB | other MiB | peak MiB | step p50 ms | forward p50 ms | backward p50 ms | loss after 35 steps |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
PY
fi

if [ "$group" = all ] || [ "$group" = inference ]; then
# The inference path: batch x precision sweeps with accuracy against fp32.
run "infer-gpt-small" "$bin/tvie" infer --model gpt --preset small --batch 1,4,16,64 --dtype fp32,bf16,int8 \
    --steps 10 --warmup 2 --device cpu --quiet --json "$out/infer-gpt-small.json"
run "infer-mlp-small" "$bin/tvie" infer --model mlp --preset small --batch 1,64 --dtype fp32,bf16,int8 \
    --steps 20 --warmup 3 --device cpu --quiet --json "$out/infer-mlp-small.json"
# A 16 MiB device, emulated: the larger batches do not fit and the sweep goes on.
run "infer-gpt-tiny-16mib" "$bin/tvie" infer --model gpt --preset tiny --batch 1,2,4,...,256 --dtype fp32,int8 \
    --steps 10 --warmup 2 --cpu-memory-limit-mb 16 --device cpu --quiet --json "$out/infer-gpt-tiny-16mib.json"
# The serving compute tail on this CPU: the same 25 QPS load, three seeds, under OpenMP's default wait policy,
# passive and active waiting, and one intra-op thread (compute-time row of each run).
run "serve-gpt-tiny-25qps-omp" bash -c "cd '$TVIE_ROOT'; echo 'columns of compute (ms): p50 p90 p95 p99 p99.9 mean max'; for rep in 1 2 3; do \
  for e in OMP_UNSET=1 OMP_WAIT_POLICY=passive OMP_WAIT_POLICY=active OMP_NUM_THREADS=1; do \
  printf '%-24s seed %s %s\n' \$e \$rep \"\$(env \$e build/bin/tvie serve --model gpt --preset tiny --qps 25 \
  --queries 200 --min-queries 100 --seed \$rep --device cpu --quiet | grep '  compute')\"; done; done"
# The highest Poisson rate whose p99 stays under 20 ms (one intra-op thread: see the run above).
run "serve-gpt-tiny-maxqps" env OMP_NUM_THREADS=1 "$bin/tvie" serve --model gpt --preset tiny --find-max-qps \
    --p99-ms 20 --qps 50 --max-batch 16 --max-queue-delay-us 2000 --min-queries 256 --min-duration-ms 2000 \
    --device cpu --quiet --json "$out/serve-gpt-tiny-maxqps.json"
# A TorchScript model saved from Python (torch.jit.script), run as loaded, frozen, and frozen + optimised.
script_dir="$TVIE_BUILD_DIR/torchscript"
mkdir -p "$script_dir"
"$TVIE_VENV/bin/python" - "$script_dir/convnet.pt" 2>/dev/null <<'PY'
import sys, torch
torch.manual_seed(0)
def block(cin, cout):  # conv + batchnorm + relu: what optimize_for_inference folds and fuses
    return [torch.nn.Conv2d(cin, cout, 3, padding=1), torch.nn.BatchNorm2d(cout), torch.nn.ReLU()]
net = torch.nn.Sequential(*block(3, 32), *block(32, 64), torch.nn.MaxPool2d(2), *block(64, 64),
                          torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10))
net.eval()
torch.jit.save(torch.jit.script(net), sys.argv[1])
PY
for fusion in none freeze optimize; do
  run "infer-script-$fusion" "$bin/tvie" infer --torchscript "$script_dir/convnet.pt" --input-shape 3,32,32 \
      --fusion "$fusion" --batch 1,32 --steps 20 --warmup 3 --device cpu --quiet \
      --json "$out/infer-script-$fusion.json"
done
python3 - "$out" >"$out/infer-script-table.md" <<'PY'
import json, sys, os
out = sys.argv[1]
print("| TorchScript model | batch | p50 ms | p99 ms | samples/s | weights KiB | activations KiB | peak KiB |")
print("|---|---|---|---|---|---|---|---|")
for fusion in ["none", "freeze", "optimize"]:
    j = json.load(open(os.path.join(out, f"infer-script-{fusion}.json")))
    for row in j["inference_sweep"]["rows"]:
        r = row["result"]; m = r["memory"]
        print(f"| {j['model']['name']} | {row['batch_size']} | {r['latency_ms']['p50']:.3f} | {r['latency_ms']['p99']:.3f} | "
              f"{r['throughput']['samples_per_s']:.0f} | {(m['parameters'] + m['packed_weights']) / 1024:.1f} | "
              f"{m['activations'] / 1024:.1f} | {m['peak'] / 1024:.1f} |")
PY
fi

if [ "$group" = all ] || [ "$group" = aoti ]; then
# gpt small on weights tvie trained, run by LibTorch's eager kernels and compiled by AOTInductor
# (examples/aoti_zoo_gpt.py: the same logits), fp32 and bf16, the full-sequence forward at three batch sizes.
aoti_dir="$TVIE_BUILD_DIR/aoti"
mkdir -p "$aoti_dir"
"$bin/tvie" train --model gpt --preset small --batch 8 --steps 20 --warmup 2 --device cpu --quiet \
    --save-parameters "$aoti_dir/gpt-small.pt" >/dev/null
for dtype in fp32 bf16; do
  "$TVIE_VENV/bin/python" "$TVIE_ROOT/examples/aoti_zoo_gpt.py" "$aoti_dir/gpt-small.pt" "$aoti_dir/gpt-small-$dtype.pt2" \
      --heads 8 --dtype "$dtype" --max-batch 64 >/dev/null 2>&1
  run "infer-aoti-gpt-small-$dtype" "$bin/tvie" infer --aoti "$aoti_dir/gpt-small-$dtype.pt2" --input-shape 128 \
      --vocab 4096 --batch 1,4,16 --dtype "$dtype" --steps 10 --warmup 2 --device cpu --quiet \
      --json "$out/infer-aoti-gpt-small-$dtype.json"
  run "infer-eager-gpt-small-$dtype" "$bin/tvie" infer --model gpt --preset small \
      --load-parameters "$aoti_dir/gpt-small.pt" --batch 1,4,16 --dtype "$dtype" --steps 10 --warmup 2 --device cpu \
      --quiet --json "$out/infer-eager-gpt-small-$dtype.json"
done
python3 - "$out" "$machine" "$commit" >"$out/infer-aoti-table.md" <<'PY'
import json, sys, os
out, machine, commit = sys.argv[1:4]
print(f"gpt small (4.2M parameters, 128 tokens a sample) on the same trained weights, eager and AOTInductor-compiled; "
      f"{machine}; commit {commit}; generated by `scripts/cpu-results.sh aoti`.\n")
print("| path | dtype | batch | p50 ms | samples/s | of peak | weights KiB | activations KiB | peak KiB |")
print("|---|---|---|---|---|---|---|---|---|")
for dtype in ["fp32", "bf16"]:
    for path in ["eager", "aoti"]:
        j = json.load(open(os.path.join(out, f"infer-{path}-gpt-small-{dtype}.json")))
        for row in j["inference_sweep"]["rows"]:
            r = row["result"]; m = r["memory"]
            of_peak = (row.get("of_card") or {}).get("peak_fraction")
            print(f"| {'AOTInductor' if path == 'aoti' else 'eager'} | {dtype} | {row['batch_size']} | "
                  f"{r['latency_ms']['p50']:.3f} | {r['throughput']['samples_per_s']:.0f} | "
                  f"{'-' if of_peak is None else f'{100 * of_peak:.1f}%'} | "
                  f"{(m['parameters'] + m['packed_weights']) / 1024:.1f} | {m['activations'] / 1024:.1f} | "
                  f"{m['peak'] / 1024:.1f} |")
PY
# ResNet-18 (ImageNet layout, 224x224) trained a few steps, then compare --aoti: eager and the compiled package
# (examples/aoti_zoo_resnet.py: the same logits) at the inference batch, on the same images.
"$bin/tvie" train --model resnet --preset resnet18 --batch 8 --steps 2 --warmup 1 --device cpu --quiet \
    --save-parameters "$aoti_dir/resnet18.pt" >/dev/null
for dtype in fp32 bf16; do
  "$TVIE_VENV/bin/python" "$TVIE_ROOT/examples/aoti_zoo_resnet.py" "$aoti_dir/resnet18.pt" \
      "$aoti_dir/resnet18-$dtype.pt2" --image-size 224 --dtype "$dtype" --max-batch 64 >/dev/null 2>&1
  for batch in 1 16; do
    run "compare-aoti-resnet18-$dtype-b$batch" "$bin/tvie" compare --model resnet --preset resnet18 --batch 8 \
        --steps 2 --warmup 1 --infer-batch "$batch" --infer-steps 10 --infer-dtype "$dtype" --device cpu \
        --aoti "$aoti_dir/resnet18-$dtype.pt2" --quiet --json "$out/compare-aoti-resnet18-$dtype-b$batch.json"
  done
done
python3 - "$out" "$machine" "$commit" >"$out/compare-aoti-resnet18-table.md" <<'PY'
import json, sys, os
out, machine, commit = sys.argv[1:4]
print(f"ResNet-18 (11.7M parameters, 224x224 images), `tvie compare --aoti`: the inference batch on eager LibTorch and "
      f"on the AOTInductor package of the same model, the same images; {machine}; commit {commit}; generated by "
      f"`scripts/cpu-results.sh aoti`.\n")
print("| dtype | batch | eager p50 ms | compiled p50 ms | eager samples/s | compiled samples/s | compiled / eager | "
      "eager of peak | compiled of peak | eager peak MiB | compiled peak MiB |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for dtype in ["fp32", "bf16"]:
    for batch in [1, 16]:
        j = json.load(open(os.path.join(out, f"compare-aoti-resnet18-{dtype}-b{batch}.json")))
        e, c = j["inference"], j["compiled_inference"]
        pe, pc = e["of_card"].get("peak_fraction"), c["of_card"].get("peak_fraction")
        pct = lambda f: "-" if f is None or f < 0 else f"{100 * f:.1f}%"
        print(f"| {dtype} | {batch} | {e['latency_ms']['p50']:.2f} | {c['latency_ms']['p50']:.2f} | "
              f"{e['throughput']['samples_per_s']:.1f} | {c['throughput']['samples_per_s']:.1f} | "
              f"{j['gap']['compiled_throughput_ratio']:.2f}x | {pct(pe)} | {pct(pc)} | "
              f"{e['memory']['peak'] / 2**20:.1f} | {c['memory']['peak'] / 2**20:.1f} |")
PY
fi

if [ "$group" = all ] || [ "$group" = decode-dtypes ]; then
# Batch-1 decoding, which reads every weight once per token, in each weight scheme the CPU runs: bf16, int8 weight-only
# (W8A16, _weight_int8pack_mm) and int8 dynamic (W8A8, fbgemm), Llama 3.2 1B and GPT-2 small at their real widths.
for preset in llama-3.2-1b gpt2-small; do
  model=llama; [ "$preset" = gpt2-small ] && model=gpt
  for dtype in bf16 int8-weight-only int8; do
    run "decode-$preset-$dtype" "$bin/tvie" decode --model "$model" --preset "$preset" --batch 1 --prompt 64 \
        --new-tokens 32 --repetitions 3 --dtype "$dtype" --device cpu --quiet --json "$out/decode-$preset-$dtype.json"
  done
done
python3 - "$out" "$machine" >"$out/decode-dtypes-table.md" <<'PY'
import json, os, sys
out, machine = sys.argv[1], sys.argv[2]
print(f"Batch-1 generation (prompt 64, 32 new tokens, 3 timed runs) on {machine}; each row a "
      "`decode-PRESET-DTYPE.json` of this folder. Weights and peak measured (each equal to its prediction in the "
      "file, int8's fbgemm packs aside). TTFT = time to first token (the prefill); TPOT = time per output token (a "
      "decoding step, which reads every weight once); decoding vs bf16 = bf16's TPOT / the row's TPOT; tokens/s over "
      "whole runs, prefill included. Step of bandwidth: the bytes a decoding step reads at least (the weights and "
      "the keys and values it attends to) / mean TPOT / the bandwidth of the report's card (`of_card`, docs/metrics.md"
      ", \"Fractions of the card\"), here the catalog's estimate for this CPU: the one figure to compare with a GPU's.")
print()
print("| model | dtype | weights MiB | peak MiB | TTFT p50 ms | TPOT p50 ms | decoding vs bf16 | tokens/s | "
      "step of bandwidth |")
print("|---|---|---|---|---|---|---|---|---|")
schemes, cards, fastest = {}, set(), 0.0
for preset in ["llama-3.2-1b", "gpt2-small"]:
    base = None
    for dtype in ["bf16", "int8-weight-only", "int8"]:
        d = json.load(open(os.path.join(out, f"decode-{preset}-{dtype}.json")))["decoding"]
        base = base or d["tpot_ms"]["p50"]
        schemes[dtype] = d["scheme"]
        m, step = d["memory"], d["of_card"]["decoding"]
        cards.add(f"{step['card_name']}, {step['bandwidth_gbs']:.1f} GB/s" if step["card"] else step["why_none"])
        mbu = "-" if step["bandwidth_fraction"] is None else f"{100 * step['bandwidth_fraction']:.1f}%"
        fastest = max(fastest, step["bytes"] / (d["tpot_ms"]["mean"] / 1e3) / 1e9)
        print(f"| {preset} | {dtype} | {m['parameters'] / 2**20:.1f} | {m['peak'] / 2**20:.1f} | "
              f"{d['ttft_ms']['p50']:.1f} | {d['tpot_ms']['p50']:.1f} | {base / d['tpot_ms']['p50']:.2f}x | "
              f"{d['tokens_per_s']:.1f} | {mbu} |")
print()
print("The card: " + "; ".join(sorted(cards)) + f". The fastest step read {fastest:.1f} GB/s. A step above 100% read "
      "faster than the catalog's bandwidth for this CPU, which is an estimate per core (lib/data/accelerators.json, "
      "cpu_classes: its note gives a range), not this machine's measured figure.")
print()
for dtype, scheme in schemes.items():
    print(f"- {dtype}: {scheme}")
PY
fi

if [ "$group" = all ] || [ "$group" = accuracy ]; then
# The reduced precisions' accuracy on trained weights: gpt tiny trained on its copy task (the learning run's settings),
# its parameters saved, then the sweep on them beside the same sweep on fresh weights of seed 0.
params="$(mktemp -d)/gpt-tiny-trained.pt"
run "train-gpt-tiny-for-accuracy" "$bin/tvie" train --model gpt --preset tiny --batch 16 --steps 300 --warmup 0 \
    --lr 3e-3 --clip 1.0 --device cpu --quiet --json "$out/train-gpt-tiny-for-accuracy.json" --save-parameters "$params"
for weights in trained fresh; do
  load=(); [ "$weights" = trained ] && load=(--load-parameters "$params")
  run "infer-gpt-tiny-$weights" "$bin/tvie" infer --model gpt --preset tiny --batch 16 \
      --dtype fp32,bf16,int8,int8-weight-only --steps 5 --warmup 1 --device cpu --quiet \
      --json "$out/infer-gpt-tiny-$weights.json" "${load[@]}"
done
rm -rf "$(dirname "$params")"
python3 - "$out" >"$out/infer-gpt-tiny-accuracy.md" <<'PY'
import json, os, sys
out = sys.argv[1]
t = json.load(open(os.path.join(out, "train-gpt-tiny-for-accuracy.json")))["training"]
print(f"gpt tiny's outputs (logits at every position, batch 16) in each precision against fp32 on the same inputs: on "
      f"weights trained for {t['optimizer_steps']} steps on the copy task to a loss of {t['loss']['final']:.3f} "
      f"(train-gpt-tiny-for-accuracy.json; step 1: {t['loss']['first']:.3f}), and on fresh weights of seed 0, whose "
      "near-uniform logits make top-1 agreement say little. Rows from infer-gpt-tiny-trained.json and "
      "infer-gpt-tiny-fresh.json.")
print()
print("| dtype | trained: mean abs err / mean abs fp32 | trained: top-1 agreement | fresh: mean abs err / mean abs fp32 | fresh: top-1 agreement |")
print("|---|---|---|---|---|")
rows = {w: json.load(open(os.path.join(out, f"infer-gpt-tiny-{w}.json")))["inference_sweep"]["rows"] for w in ["trained", "fresh"]}
for i, row in enumerate(rows["trained"]):
    if "accuracy_vs_fp32" not in row: continue
    cells = []
    for w in ["trained", "fresh"]:
        a = rows[w][i]["accuracy_vs_fp32"]
        cells += [f"{a['mean_abs_error'] / a['reference_mean_abs']:.4f}", f"{100 * a['top1_agreement']:.2f}%"]
    print(f"| {row['dtype']} | " + " | ".join(cells) + " |")
PY
fi

if [ "$group" = all ] || [ "$group" = max-batch ]; then
# The largest batch that fits training and inference on an emulated 64 MiB device (README's headline of the gap).
run "max-batch-gpt-tiny" "$bin/tvie" compare --model gpt --preset tiny --find-max-batch --cpu-memory-limit-mb 64 \
    --optimizer adamw --device cpu --quiet --json "$out/max-batch-gpt-tiny.json"
fi

if [ "$group" = all ] || [ "$group" = plan ]; then
# The host card's projection against what this CPU measures (tvie plan --measure): the training step, an inference
# batch, and a generation's prefill and decoding step, each with its factor and the term it corrects.
run "plan-gpt-small-measured" "$bin/tvie" plan --model gpt --preset small --batch 8 --infer-dtype fp32 \
    --new-tokens 32 --prompt-tokens 32 --measure --steps 5 --warmup 2 --cards t4 --device cpu --quiet \
    --json "$out/plan-gpt-small-measured.json"
fi

if [ "$group" = all ] || [ "$group" = plan-bound ]; then
# A generation at batch 1 against the host card's roofline bound (docs/plan.md, "How good is it"): whether the
# decoding step measured here beat the bound the catalog's DRAM bandwidth per core sets (weights held in the
# CPU's cache), for the whole model and for a 2-block slice of it (--measure-layers 2).
for layers in 0 2; do
  name="plan-gpt-small-batch1"; slice=()
  if [ "$layers" != 0 ]; then name="$name-${layers}blocks"; slice=(--measure-layers "$layers"); fi
  run "$name" "$bin/tvie" plan --model gpt --preset small --batch 1 --infer-dtype fp32 --new-tokens 32 \
      --prompt-tokens 32 --measure "${slice[@]}" --steps 5 --warmup 2 --cards t4 --device cpu --quiet \
      --json "$out/$name.json"
done
fi

if [ "$group" = all ] || [ "$group" = calibration ]; then
# How a calibration transfers to other workloads on the same CPU: gpt small's training step (fp32, AdamW, batch 8)
# measured, with one more step profiled by operator class, then other models, batches, optimizers and precisions
# projected on the host card with it: by the whole step (the report without its phases), by phase (forward,
# backward, optimizer: the report without its time by class) and by class within the forward and backward (the
# whole report), against what each measures (docs/plan.md, "How good is it").
run "calibration-source-gpt-small" "$bin/tvie" train --model gpt --preset small --batch 8 --steps 10 --warmup 2 \
    --optimizer adamw --precision fp32 --profile-classes --device cpu --quiet \
    --json "$out/calibration-source-gpt-small.json"
# The source's own factors, step, phases and classes, as the plan prints them (what docs/plan.md quotes).
(cd "$TVIE_ROOT" && run "calibration-source-plan" "$bin/tvie" plan --model gpt --preset small --batch 8 \
    --optimizer adamw --precision fp32 --from "$out/calibration-source-gpt-small.json" --cards t4 --quiet)
python3 - "$bin/tvie" "$out" "$machine" "$commit" >"$out/calibration-transfer.md" <<'PY'
import copy, json, os, subprocess, sys, tempfile
tvie, out, machine, commit = sys.argv[1:]
source = os.path.join(out, "calibration-source-gpt-small.json")
tmp = tempfile.mkdtemp()
report = json.load(open(source))
def without(keys, name):  # the source report with some of its measurements left out
    r = copy.deepcopy(report)
    for k in keys:
        del r["training"][k]
    path = os.path.join(tmp, name)
    json.dump(r, open(path, "w"))
    return path
whole = without(["phases", "time_by_class"], "source-step-only.json")  # the step's factor only
phases = without(["time_by_class"], "source-phases-only.json")  # phase by phase, no classes
targets = [  # model, preset, batch, optimizer, precision
    ("gpt", "small", 8, "adamw", "fp32"), ("gpt", "small", 2, "sgd", "fp32"), ("gpt", "small", 8, "adamw", "amp-bf16"),
    ("mlp", "small", 256, "adamw", "fp32"), ("cnn", "small", 32, "sgd", "fp32"), ("resnet", "tiny", 16, "adamw", "fp32"),
    ("bert", "tiny", 16, "adamw", "fp32"), ("llama", "tiny", 16, "adamw", "fp32")]
def host_step(args, source_report):
    path = os.path.join(tmp, "plan.json")
    cmd = [tvie, "plan", *args, "--cards", "t4", "--quiet", "--json", path]
    if source_report:
        cmd += ["--from", source_report]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    host = [c for c in json.load(open(path))["cards"] if c["id"] == "host"][0]
    return host["training"]["step"]["estimate_s"] * 1e3
rows = []
for model, preset, batch, optimizer, precision in targets:
    args = ["--model", model, "--preset", preset, "--batch", str(batch), "--optimizer", optimizer,
            "--precision", precision]
    path = os.path.join(tmp, "train.json")
    subprocess.run([tvie, "train", *args, "--steps", "10", "--warmup", "2", "--device", "cpu", "--quiet", "--json",
                    path], check=True, stdout=subprocess.DEVNULL)
    measured = json.load(open(path))["training"]["step_ms"]["mean"]
    est = [host_step(args, None), host_step(args, whole), host_step(args, phases), host_step(args, source)]
    rows.append((f"{model} {preset}, batch {batch}, {optimizer}, {precision}", measured, est))
src = report["training"]
print("# A calibration carried to other workloads on the host card: by the whole step, by phase, by class")
print()
print(f"Machine: {machine}; commit {commit}; generated by `scripts/cpu-results.sh calibration` (no figure typed by "
      "hand). The calibration is gpt small's training step measured here "
      f"({src['settings']['precision']}, {src['settings']['optimizer']}, batch {src['settings']['batch_size']}: "
      f"{src['step_ms']['mean']:.2f} ms, and one more step profiled by operator class; "
      "[calibration-source-gpt-small.json](calibration-source-gpt-small.json)). "
      "Each row is another workload's training step, measured here (mean of 10 after 2 warm-up) and projected on the "
      "host card (`tvie plan --cards t4`, the host's row): uncalibrated; calibrated by the source's whole step (its "
      "report without the phases); phase by phase (forward, backward, optimizer: the report without its time by "
      "class); and by class within the forward and backward (the whole report; a class the source has no time for, "
      "the convolutions, takes its phase's factor). Error = estimate / measured - 1. Times on 2 shared cores: a few "
      "percent of noise.")
print()
print("| workload | measured ms | uncalibrated ms (error) | whole-step calibration ms (error) | "
      "by-phase calibration ms (error) | by-class calibration ms (error) |")
print("|---|---|---|---|---|---|")
err = lambda e, m: f"{e:.2f} ({(e / m - 1) * 100:+.0f}%)"
for name, m, est in rows:
    print(f"| {name} | {m:.2f} | " + " | ".join(err(e, m) for e in est) + " |")
mean_abs = lambda k: sum(abs(r[2][k] / r[1] - 1) for r in rows) / len(rows) * 100
print()
print(f"Mean absolute error over the {len(rows)} workloads: uncalibrated {mean_abs(0):.0f}%, whole-step "
      f"{mean_abs(1):.0f}%, by phase {mean_abs(2):.0f}%, by class {mean_abs(3):.0f}%.")
PY
fi

if [ "$group" = all ] || [ "$group" = slices ]; then
# Llama 3 8B training emulated by slices of 1 and 2 of its 32 blocks at the real width, with AdamW at batch
# 1 x 128 tokens, in three precisions. Pure bf16 fits this 24 GiB machine with the real vocabulary; fp32 and
# amp-bf16 hold 16 and 18 bytes per parameter, 15.7 GiB and more for the embedding and head alone, so their
# vocabulary is sliced too (16032 and 32064 of its 128256 entries: a third slice).
run "slices-llama-3-8b-bf16" "$bin/tvie" train --model llama --preset llama-3-8b --slice-layers 1,2 --batch 1 \
    --steps 3 --warmup 1 --precision bf16 --optimizer adamw --device cpu --quiet \
    --json "$out/slices-llama-3-8b-bf16.json"
run "slices-llama-3-8b-amp-bf16" "$bin/tvie" train --model llama --preset llama-3-8b --slice-layers 1,2 \
    --slice-vocab 16032,32064 --batch 1 --steps 3 --warmup 1 --precision amp-bf16 --optimizer adamw --device cpu \
    --quiet --json "$out/slices-llama-3-8b-amp-bf16.json"
# fp32 training beside bf16 inference of the same slices (what this CPU runs natively; inference slices keep
# the real vocabulary) and their generation (compare's default: 64-token prompts, 64 new tokens), and int8
# inference.
run "compare-slices-llama-3-8b-fp32" "$bin/tvie" compare --model llama --preset llama-3-8b --slice-layers 1,2 \
    --slice-vocab 16032,32064 --batch 1 --steps 3 --warmup 1 --precision fp32 --optimizer adamw --infer-dtype bf16 \
    --device cpu --quiet --json "$out/compare-slices-llama-3-8b-fp32.json"
run "infer-slices-llama-3-8b-int8" "$bin/tvie" infer --model llama --preset llama-3-8b --slice-layers 1,2 \
    --batch 1 --dtype int8 --steps 3 --warmup 1 --device cpu --quiet --json "$out/infer-slices-llama-3-8b-int8.json"
python3 - "$out" >"$out/llama-3-8b-train-vs-infer.md" <<'PY'
import json, os, sys
out = sys.argv[1]
load = lambda name: json.load(open(os.path.join(out, name + ".json")))
cmp = load("compare-slices-llama-3-8b-fp32")
fp32, bf16 = cmp["training_slices"], cmp["inference_slices"]
amp = load("slices-llama-3-8b-amp-bf16")["training_slices"]
pure = load("slices-llama-3-8b-bf16")["training_slices"]
int8 = load("infer-slices-llama-3-8b-int8")["inference_slices"]
gib = lambda b: f"{b / 2**30:.2f}" if b >= 0 else "-"
def sliced(x):  # how the slices were made, from the plan
    parts = []
    for a in x["axes"]:
        parts.append(f"{a['name']} {a['base']},{a['step']} of {a['full']}")
    return "; ".join(parts)
print("| Llama 3 8B, extrapolated from slices (GiB) | sliced along | weights | gradients | optimizer state | "
      "weight copies | activations / working set | peak | predicted peak |")
print("|---|---|---|---|---|---|---|---|---|")
for name, x in (("training, AdamW, fp32", fp32), ("training, AdamW, amp-bf16 (fp32 master)", amp),
                ("training, AdamW, pure bf16", pure)):
    m = x["extrapolated"]["memory"]
    print(f"| {name}, batch {x['settings']['batch_size']} x 128 | {sliced(x)} | {gib(m['parameters'])} | "
          f"{gib(m['gradients'])} | {gib(m['optimizer_state'])} | {gib(m['weight_copies'])} | {gib(m['activations'])} | "
          f"{gib(m['peak'])} | {gib(x['predicted']['peak'])} |")
for name, x in (("bf16", bf16), ("int8 (Linear weights; fbgemm's packs)", int8)):
    m = x["extrapolated"]["memory"]
    print(f"| inference, {name}, batch {x['settings']['batch_size']} x 128 | {sliced(x)} | "
          f"{gib(m['parameters'] + m['packed_weights'])} | - | - | - | {gib(m['activations'])} | {gib(m['peak'])} | "
          f"{gib(x['predicted']['peak'])} |")
print()
gen = cmp["generation_slices"]
gs, gm, gp = gen["settings"], gen["extrapolated"]["memory"], gen["predicted"]
ms = lambda v: f"{v:.1f}" if v > 0 else "not extrapolated (the slices' times did not rise)"
print("| Llama 3 8B generation, extrapolated from slices (GiB) | weights | KV cache | working set | peak | predicted peak "
      "| time to first token (ms) | time per output token (ms) |")
print("|---|---|---|---|---|---|---|---|")
print(f"| {gs['dtype']}, batch {gs['batch_size']}, {gs['prompt_tokens']}-token prompts, {gs['new_tokens']} new "
      f"| {gib(gm['parameters'])} | {gib(gm['kv_cache'])} | {gib(gm['working_set'])} | {gib(gm['peak'])} "
      f"| {gib(gp['peak'])} | {ms(gen['extrapolated']['ttft_ms_mean'])} | {ms(gen['extrapolated']['tpot_ms_mean'])} |")
print()
peak = lambda x: x["extrapolated"]["memory"]["peak"]
print(f"Training peak / bf16 inference peak: {peak(fp32) / peak(bf16):.2f}x in fp32, {peak(amp) / peak(bf16):.2f}x in "
      f"amp-bf16, {peak(pure) / peak(bf16):.2f}x in pure bf16; fp32 training / int8 inference: "
      f"{peak(fp32) / peak(int8):.2f}x; fp32 training / the bf16 generation: {peak(fp32) / peak(gen):.2f}x. "
      "The times are this CPU's (2 cores), not a GPU's. No run built the whole model "
      "(compare-slices-llama-3-8b-fp32.txt, slices-llama-3-8b-amp-bf16.txt, slices-llama-3-8b-bf16.txt, "
      "infer-slices-llama-3-8b-int8.txt).")
PY
fi

if [ "$group" = all ] || [ "$group" = dist ]; then
# Data-parallel training and the all-reduce sweep: 2 ranks over Gloo on this machine.
run "launch-train-gpt-tiny" "$bin/tvie" launch --nproc 2 -- tvie train --model gpt --preset tiny --steps 20 \
    --device cpu --quiet --json "$out/launch-train-gpt-tiny.json"
run "launch-allreduce" "$bin/tvie" launch --nproc 2 -- tvie allreduce --min-bytes 8 --max-bytes 33554432 \
    --iters 20 --warmup 5 --json "$out/launch-allreduce.json"
# Overlap of the gradient all-reduce with backward: gpt small (16 MiB of gradients) in 1 MiB buckets.
for overlap in off on; do
  flag=""; [ "$overlap" = on ] && flag="--overlap"
  run "launch-train-gpt-small-overlap-$overlap" "$bin/tvie" launch --nproc 2 -- tvie train --model gpt \
      --preset small --batch 8 --steps 10 --warmup 2 --bucket-mb 1 $flag --device cpu --quiet \
      --json "$out/launch-train-gpt-small-overlap-$overlap.json"
done
python3 - "$out" >"$out/launch-overlap-table.md" <<'PY'
import json, sys, os
out = sys.argv[1]
print("| gpt small, 2 ranks | buckets | all-reduced per step MiB | communication p50 ms | exposed p50 ms | step p50 ms | in-loop busbw GB/s | standalone busbw GB/s |")
print("|---|---|---|---|---|---|---|---|")
for overlap in ["off", "on"]:
    t = json.load(open(os.path.join(out, f"launch-train-gpt-small-overlap-{overlap}.json")))["training"]
    d = t["distributed"]
    print(f"| overlap {overlap} | {d['buckets']} | {d['bytes_per_step'] / 2**20:.2f} | {d['comm_ms']['p50']:.2f} | "
          f"{d['exposed_ms']['p50']:.2f} | {t['step_ms']['p50']:.1f} | {d['busbw_gbs']:.3f} | {d['sweep_busbw_gbs']:.3f} |")
PY
fi
python3 "$TVIE_ROOT/scripts/readme-results.py"
