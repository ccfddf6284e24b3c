"""Generate the seeded sample event streams shipped in ``sample_data/``.

Standard library only. Every run with the same ``--seed`` (default ``DEFAULT_SEED``,
20240304) writes byte-identical files: all randomness comes from ``random.Random``
instances seeded from that value (one per file), integers are used for time
internally and every number is formatted explicitly.

Files written (CSV, header row, LF line endings, rows in non-decreasing ``ts``):

``stocks.csv`` -- ``ts,type,price,volume,exchange``
    About 20,000 stock ticks over two trading days (2024-03-04 and 2024-03-05,
    09:30:00Z-16:00:00Z). ``ts`` is ISO-8601 UTC with a ``Z`` suffix at second
    precision; consecutive ticks are 0-5 s apart, so equal timestamps occur.
    ``type`` is the ticker, with strongly skewed frequencies (MSFT and AAPL very
    frequent, GOOG and AMZN medium, NVDA and TSLA lower, IBM and ORCL rare: a few
    dozen ticks each, about 1:300 against MSFT). Each ticker's ``price`` is a
    random walk (2 decimals) whose step scales with the time since that ticker's
    previous tick; ``volume`` is an integer 1..5000; ``exchange`` is
    NASDAQ, NYSE or ARCA.

``sensors.csv`` -- ``ts,type,sensor,room,value``
    About 8,000 building sensor readings over roughly two hours. ``ts`` is seconds
    from 0 with 3 decimals. Sensors ``s01``..``s12`` sit two per room (odd ids:
    environment sensors sending TEMP, HUMIDITY, SMOKE; even ids: door/alarm panels
    sending DOOR, ALARM). ``value`` is degrees C (TEMP), % (HUMIDITY), 0/1 (DOOR),
    ppm (SMOKE) or 1 (ALARM). A few fire incidents put a high SMOKE reading, an
    ALARM and TEMP spikes above 60 C in one room, so that "SMOKE then TEMP > 50 in
    the same room" has a handful of matches; background SMOKE readings are low ppm
    and one decoy TEMP spike has no incident. About 0.5% of the ordinary readings
    have an empty ``value``.

``ticks_small.csv`` -- ``ts,type,price``
    A fixed, hand-checkable 30-row stream (integer seconds 0..60, types A-D) for
    README examples. It is written from a literal table, not from the RNG.

Usage::

    python scripts/make_samples.py                 # writes <repo>/sample_data/
    python scripts/make_samples.py --out DIR --seed N
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import math
import random
from collections.abc import Iterable, Sequence
from pathlib import Path

DEFAULT_SEED = 20240304
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "sample_data"

# --------------------------------------------------------------------------- stocks

# ticker, relative frequency, opening price on day 1
TICKERS: list[tuple[str, float, float]] = [
    ("MSFT", 0.3400, 415.50),
    ("AAPL", 0.2800, 175.10),
    ("GOOG", 0.1300, 138.90),
    ("AMZN", 0.1200, 178.20),
    ("NVDA", 0.0700, 852.40),
    ("TSLA", 0.0580, 188.70),
    ("IBM", 0.0019, 190.30),
    ("ORCL", 0.0011, 114.60),
]
TRADING_DAYS = [dt.date(2024, 3, 4), dt.date(2024, 3, 5)]
SESSION_OPEN = dt.time(9, 30, 0)
SESSION_SECONDS = 6 * 3600 + 30 * 60  # 09:30 -> 16:00
# gap in seconds between consecutive ticks, and its weight (mean 2.3 s)
TICK_GAPS = [0, 1, 2, 3, 4, 5]
TICK_GAP_WEIGHTS = [0.15, 0.20, 0.20, 0.20, 0.15, 0.10]
EXCHANGES = ["NASDAQ", "NYSE", "ARCA"]
EXCHANGE_WEIGHTS = [0.5, 0.3, 0.2]
VOL_PER_SQRT_SECOND = 0.00015  # ~2.3% per 6.5 h session


def make_stocks(rng: random.Random) -> list[list[str]]:
    names = [t[0] for t in TICKERS]
    weights = [t[1] for t in TICKERS]
    price = {name: start for name, _, start in TICKERS}
    last_seen = {name: 0 for name in names}  # in continuous trading seconds
    rows: list[list[str]] = []
    for day_index, day in enumerate(TRADING_DAYS):
        open_dt = dt.datetime.combine(day, SESSION_OPEN, tzinfo=dt.UTC)
        sec = 0
        while sec <= SESSION_SECONDS:
            name = rng.choices(names, weights)[0]
            now = day_index * SESSION_SECONDS + sec
            elapsed = max(1, now - last_seen[name])
            last_seen[name] = now
            ret = rng.gauss(0.0, VOL_PER_SQRT_SECOND * math.sqrt(elapsed))
            price[name] = max(0.01, price[name] * math.exp(ret))
            volume = min(5000, max(1, int(rng.lognormvariate(5.0, 1.2))))
            exchange = rng.choices(EXCHANGES, EXCHANGE_WEIGHTS)[0]
            ts = (open_dt + dt.timedelta(seconds=sec)).strftime("%Y-%m-%dT%H:%M:%SZ")
            rows.append([ts, name, f"{price[name]:.2f}", str(volume), exchange])
            sec += rng.choices(TICK_GAPS, TICK_GAP_WEIGHTS)[0]
    return rows


# -------------------------------------------------------------------------- sensors

ROOMS = ["lab", "kitchen", "hall", "office", "server_room", "lobby"]
# room -> (environment sensor, door/alarm panel); s01/s02 lab, s03/s04 kitchen, ...
ROOM_SENSORS = {room: (f"s{2 * i + 1:02d}", f"s{2 * i + 2:02d}") for i, room in enumerate(ROOMS)}
BASE_TEMP = {
    "lab": 21.0,
    "kitchen": 24.0,
    "hall": 19.0,
    "office": 22.0,
    "server_room": 27.0,
    "lobby": 20.0,
}
BASE_HUMIDITY = {
    "lab": 40.0,
    "kitchen": 55.0,
    "hall": 45.0,
    "office": 38.0,
    "server_room": 30.0,
    "lobby": 48.0,
}
BASE_ROWS = 8030
MEAN_GAP_MS = 900
SENSOR_TYPES = ["TEMP", "HUMIDITY", "DOOR", "SMOKE", "ALARM"]
SENSOR_TYPE_WEIGHTS = [0.42, 0.36, 0.2165, 0.0025, 0.0010]
MISSING_RATE = 0.005
INCIDENT_ROOMS = 4  # rooms with a fire incident (smoke + alarm + temperature spike)
INCIDENT_CLEAR_MS = 150_000  # ordinary TEMP readings suppressed this long after SMOKE

# a sensor event: (ts_ms, type, sensor, room, value)
SensorRow = tuple[int, str, str, str, str]


def _ms(ts_ms: int) -> str:
    return f"{ts_ms // 1000}.{ts_ms % 1000:03d}"


def make_sensors(rng: random.Random) -> list[list[str]]:
    temp = dict(BASE_TEMP)
    hum = dict(BASE_HUMIDITY)
    door_open = {room: 0 for room in ROOMS}
    base: list[SensorRow] = []
    t = 0
    for _ in range(BASE_ROWS):
        kind = rng.choices(SENSOR_TYPES, SENSOR_TYPE_WEIGHTS)[0]
        room = rng.choice(ROOMS)
        env, panel = ROOM_SENSORS[room]
        if kind == "TEMP":
            temp[room] += 0.1 * (BASE_TEMP[room] - temp[room]) + rng.gauss(0.0, 0.3)
            row: SensorRow = (t, kind, env, room, f"{temp[room]:.1f}")
        elif kind == "HUMIDITY":
            hum[room] += 0.1 * (BASE_HUMIDITY[room] - hum[room]) + rng.gauss(0.0, 0.8)
            hum[room] = min(100.0, max(0.0, hum[room]))
            row = (t, kind, env, room, f"{hum[room]:.1f}")
        elif kind == "DOOR":
            door_open[room] = 1 - door_open[room]
            row = (t, kind, panel, room, str(door_open[room]))
        elif kind == "SMOKE":  # background reading, well below incident levels
            row = (t, kind, env, room, str(rng.randint(2, 40)))
        else:  # ALARM: test / false alarm
            row = (t, kind, panel, room, "1")
        if kind in ("TEMP", "HUMIDITY", "DOOR") and rng.random() < MISSING_RATE:
            row = (*row[:4], "")
        base.append(row)
        t += int(round(rng.expovariate(1.0 / MEAN_GAP_MS)))
    end = base[-1][0]

    # Fire incidents, spread over the run, in distinct rooms.
    extra: list[SensorRow] = []
    windows: list[tuple[str, int, int]] = []  # (room, from_ms, to_ms) without normal TEMP
    rooms = rng.sample(ROOMS, INCIDENT_ROOMS)
    for i, room in enumerate(rooms):
        env, panel = ROOM_SENSORS[room]
        t0 = int(end * (i + 0.6) / (INCIDENT_ROOMS + 0.5)) + rng.randint(-60_000, 60_000)
        extra.append((t0, "SMOKE", env, room, str(rng.randint(150, 800))))
        if rng.random() < 0.5:
            extra.append((t0 + rng.randint(5_000, 15_000), "SMOKE", env, room, str(rng.randint(400, 950))))
        extra.append((t0 + rng.randint(3_000, 20_000), "ALARM", panel, room, "1"))
        ts_spike = t0
        for k in range(rng.randint(1, 3)):
            ts_spike += rng.randint(10_000, 40_000)
            lo = 61.0 if k == 0 else 52.0
            extra.append((ts_spike, "TEMP", env, room, f"{rng.uniform(lo, 85.0):.1f}"))
        windows.append((room, t0, t0 + INCIDENT_CLEAR_MS))

    # Decoy: a hot TEMP (oven) in a room without an incident, early in the run.
    decoy_room = next(r for r in ("kitchen", *ROOMS) if r not in rooms)
    decoy_t = int(end * 0.05)
    extra.append((decoy_t, "TEMP", ROOM_SENSORS[decoy_room][0], decoy_room, "55.0"))

    def suppressed(r: SensorRow) -> bool:
        return r[1] == "TEMP" and any(room == r[3] and a < r[0] <= b for room, a, b in windows)

    merged = [r for r in base if not suppressed(r)] + extra
    merged.sort(key=lambda r: r[0])  # stable: base rows keep their order on ties
    return [[_ms(ts), kind, sensor, room, value] for ts, kind, sensor, room, value in merged]


# ---------------------------------------------------------------------- ticks_small

# ts, type, price -- fixed so README examples can be checked by eye.
TICKS_SMALL: list[tuple[int, str, str]] = [
    (0, "A", "10"),
    (2, "B", "12"),
    (3, "C", "11"),
    (5, "A", "15"),
    (6, "D", "40"),
    (8, "B", "9"),
    (9, "C", "14"),
    (12, "A", "20"),
    (14, "A", "22"),
    (15, "C", "13"),
    (17, "B", "25"),
    (20, "D", "35"),
    (21, "C", "30"),
    (24, "B", "18"),
    (25, "A", "12"),
    (27, "D", "50"),
    (30, "C", "16"),
    (31, "B", "21"),
    (33, "A", "31"),
    (33, "B", "19"),
    (36, "C", "24"),
    (38, "D", "45"),
    (41, "A", "8"),
    (44, "B", "27"),
    (46, "C", "29"),
    (49, "D", "55"),
    (52, "A", "17"),
    (55, "C", "33"),
    (58, "B", "14"),
    (60, "D", "60"),
]


def make_ticks_small() -> list[list[str]]:
    return [[str(ts), kind, price] for ts, kind, price in TICKS_SMALL]


# ---------------------------------------------------------------------------- main


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[str]]) -> int:
    count = 0
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        for row in rows:
            writer.writerow(row)
            count += 1
    return count


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default: {DEFAULT_OUT})"
    )
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default: {DEFAULT_SEED})"
    )
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)

    files = [
        (
            "stocks.csv",
            ["ts", "type", "price", "volume", "exchange"],
            make_stocks(random.Random(args.seed)),
        ),
        (
            "sensors.csv",
            ["ts", "type", "sensor", "room", "value"],
            make_sensors(random.Random(args.seed + 1)),
        ),
        ("ticks_small.csv", ["ts", "type", "price"], make_ticks_small()),
    ]
    for name, header, rows in files:
        n = write_csv(out / name, header, rows)
        print(f"wrote {out / name} ({n} rows)")


if __name__ == "__main__":
    main()
