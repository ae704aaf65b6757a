"""What the oneDNN bookings scripts share: running the probe (build.sh) and naming where a result was made."""
import os
import subprocess


def run_probe(path, mode, lines, threads, env_extra=None):
    """The probe's output lines for `lines` in `mode` (bf16, f32 or matmul) at `threads` OpenMP threads."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), **(env_extra or {}))
    text = "\n".join(lines) + "\n"
    return subprocess.run([path, mode], input=text, env=env, capture_output=True, text=True,
                          check=True).stdout.splitlines()


def repository_commit():
    return subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()


def host():
    """'<CPU model>, <n> cores'."""
    model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    return f"{model}, {os.cpu_count()} cores"


def onednn_version(path):
    """The probe's oneDNN version, with the source commit build.sh wrote down where oneDNN does not know its own."""
    version = subprocess.run([path, "version"], capture_output=True, text=True).stdout.strip()
    commit_file = os.path.join(os.path.dirname(path), "onednn-commit")
    if "commit N/A" in version and os.path.exists(commit_file):
        version += ", source commit " + open(commit_file).read().strip()
    return version
