"""Pictures of ``cepcli bench`` results (matplotlib, the optional extra ``cepcli[plot]``):
the paper's figures, throughput and peak instances against the window, log scale, one
line per engine."""

from __future__ import annotations

from cepcli.bench import BenchResult
from cepcli.errors import UsageError


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(
            "--plot needs matplotlib: pip install 'cepcli[plot]' (from a clone: pip install -e '.[plot]';"
            " or pip install matplotlib)"
        ) from None


def plot_bench(result: BenchResult, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (speed, instances) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name in result.engines:
        cells = [c for c in result.cells if c.engine == name]
        speed.plot([c.window for c in cells], [c.events_per_second for c in cells], marker="o", label=name)
        instances.plot(
            [c.window for c in cells], [max(c.peak_instances, 1) for c in cells], marker="o", label=name
        )
    speed.set(title="throughput", xlabel="window", ylabel="events/s", yscale="log")
    instances.set(title="peak instances", xlabel="window", ylabel="instances", yscale="log")
    for ax in (speed, instances):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
