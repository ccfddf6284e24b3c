"""The options of a ``--spark`` run (``cepcli.spark.SparkOptions``, which the package
exports): a module of its own, beneath the stages that read them, so that no stage
imports the package."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SparkOptions:
    master: str | None = None  # None: spark-submit and Spark's configuration decide
    partitions: int | None = None  # time shards (default: twice Spark's default parallelism)
    output: str | None = None  # a directory the executors write the matches to
    output_format: str = "jsonl"
    verbose: bool = False
    shard_seconds: float | None = None  # cuts time every so many seconds (the tests' tiny shards)
    split_bytes: int | None = None  # cuts files every so many bytes (the tests' tiny splits)
    lines: bool = False  # matches reach the driver's sink as their jsonl lines (else as ``Match``es)
    show: tuple[str, ...] | None = None  # the columns each event keeps (--show; None: all)
    name: str | None = None  # the query's name, one of several writing to DIR/query=NAME/
    table: str | None = None  # a Spark table or view to read instead of a path (--table)
    stream: bool = False  # --stream: the files arriving in a directory, as Structured Streaming
    checkpoint: str | None = None  # --checkpoint DIR: the stream's offsets, state and sink log
    available_now: bool = False  # --available-now: what is there, then stop
