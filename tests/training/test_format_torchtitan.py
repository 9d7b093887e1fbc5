"""The torchtitan parser on real logs (tests/samples/training/, origins in SOURCES.md).

Every figure below is read by hand from the sample's own line, and the arithmetic is in the comment beside it.
Variants no public log here shows (the 2024 `wps` line, a cut line, a printed nan, a `validate step:` line, eight
ranks printing the same line, srun labels) are built here from a real line, and each says so.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.training.samples import by_iteration, lines_of, read
from workloads.training.logs import FORMATS, parse_log
from workloads.training.logs.base import Point, Problem, clean_line
from workloads.training.logs.nemo import NemoParser
from workloads.training.logs.torchtitan import TorchtitanParser


def feed_one(line: str) -> Point | Problem | None:
    return TorchtitanParser().feed(clean_line(line), 1)


# The bf16 Qwen3 14B run's step 10, verbatim with its ANSI colours: the base of the built variants below.
BF16_10 = next(line for line in lines_of("torchtitan_qwen3_14b_bf16_b200.log") if "step: 10" in line)
# The torchao tutorial's Llama 3 8B step 10, verbatim (2025: no grad_norm, the loss with 4 decimals).
H100_10 = lines_of("torchtitan_llama3_8b_bf16_h100.log")[1]


def test_registered_under_its_name() -> None:
    assert FORMATS["torchtitan"] is TorchtitanParser
    assert TorchtitanParser.label == "torchtitan"


def test_qwen3_bf16_points_settings_and_timestamps() -> None:
    parsed = parse_log(read("torchtitan_qwen3_14b_bf16_b200.log"))
    assert parsed.format == "torchtitan"
    assert parsed.problems == []
    # log_freq 10 (the default): steps 1 and 10; the 46 other lines are the launch, setup and shutdown.
    assert [p.iteration for p in parsed.points] == [1, 10]
    assert parsed.other_lines == 48 - 2
    assert parsed.settings == {
        # `Building device mesh with parallelism: pp=1, dp_replicate=1, dp_shard=8, cp=1, tp=1, ep=1`: 1·1·8·1·1.
        "world_size": 8,
        # `Peak FLOPS used for computing MFU: 2.250e+15` (B200 bf16).
        "peak_flops": 2.25e15,
        # `Trainer is initialized with local batch size 5, global batch size 40, ..., sequence length 4096, ...`.
        "global_batch_size": 40,
        "seq_length": 4096,
    }
    step_1, step_10 = parsed.points
    # `14:08:32,550 - root - INFO - step:  1  loss: 12.26960  grad_norm: 33.5000  memory: 160.76GiB(90.13%)
    # tps: 403  tflops: 37.87  mfu: 1.68%`: the first step includes torch.compile's warm-up.
    assert step_1.at == datetime(2026, 5, 19, 14, 8, 32, 550_000, tzinfo=UTC)
    assert (step_1.loss, step_1.grad_norm) == (12.2696, 33.5)
    assert (step_1.tokens_per_second_per_accelerator, step_1.tflops_per_accelerator) == (403, 37.87)
    # `tps: 8,378  tflops: 787.57`: tflops = FLOPs per token × tps, 787.57e12 / 8378 ≈ 94 GFLOP a token, about
    # 6 × 14.8e9 parameters plus attention.
    assert (step_10.tokens_per_second_per_accelerator, step_10.tflops_per_accelerator) == (8378, 787.57)
    assert step_10.at == datetime(2026, 5, 19, 14, 8, 54, 552_000, tzinfo=UTC)
    # No step time, samples or tokens are printed: the figures derive them from the settings.
    assert (step_10.step_seconds, step_10.consumed_samples, step_10.tokens) == (None, None, None)
    # The log does not say the logging frequency, so each line stands for one step.
    assert step_10.iterations_in_interval == 1


def test_interval_from_the_poster() -> None:
    parsed = parse_log(read("torchtitan_qwen3_14b_bf16_b200.log"), options={"log_freq": 10})
    # The line at step 10 reports tps since step 1: 9 steps; the first line, 1.
    assert [(p.iteration, p.iterations_in_interval) for p in parsed.points] == [(1, 1), (10, 9)]


def test_qwen3_mxfp8_every_step() -> None:
    parsed = parse_log(read("torchtitan_qwen3_14b_mxfp8_b200.log"))
    assert parsed.format == "torchtitan"
    assert parsed.problems == []
    assert [p.iteration for p in parsed.points] == list(range(1, 11))
    # `--metrics.log_freq=1` in the echoed torchrun command; local batch 168 × 8 ranks = 1344, sequence length 128.
    assert parsed.settings == {
        "log_interval": 1,
        "world_size": 8,
        "peak_flops": 2.25e15,
        "global_batch_size": 1344,
        "seq_length": 128,
    }
    points = by_iteration(parsed.points)
    # `mfu: N/A` (MXFP8): a complete line, not a problem; `tflops: 1,000.13` has a thousands separator.
    assert points[8].tflops_per_accelerator == 1000.13
    assert points[8].tokens_per_second_per_accelerator == 11870
    assert points[3].loss == 14.44712
    # tps is per device: step 8 took 20:29:15,853 − 20:29:14,041 = 1.812 s for 1344 × 128 = 172,032 tokens, so
    # 172,032 / 1.812 ≈ 94,940 tokens/s for the job, ≈ 8 × 11,870 = 94,960 over its 8 GPUs.
    seconds = (points[8].at - points[7].at).total_seconds()
    assert seconds == pytest.approx(1.812)
    assert 1344 * 128 / seconds == pytest.approx(8 * points[8].tokens_per_second_per_accelerator, rel=0.002)


def test_llama3_h100_tutorial_lines() -> None:
    parsed = parse_log(read("torchtitan_llama3_8b_bf16_h100.log"))
    assert parsed.format == "torchtitan"
    # `    [rank0]:[titan] ...`: the rst block's indent and torchrun's rank prefix are both removed.
    assert [p.iteration for p in parsed.points] == [1, 10, 20, 30, 40]
    assert parsed.other_lines == 1  # the GC line
    assert parsed.settings == {}
    step_20 = by_iteration(parsed.points)[20]
    # `11:03:01,988 - root - INFO - step: 20  loss:  8.9482  memory: 30.89GiB(32.51%)  tps: 6,321  tflops: 366.06`.
    assert step_20.at == datetime(2025, 6, 4, 11, 3, 1, 988_000, tzinfo=UTC)
    assert (step_20.loss, step_20.tokens_per_second_per_accelerator, step_20.tflops_per_accelerator) == (
        8.9482,
        6321,
        366.06,
    )
    assert step_20.grad_norm is None  # not printed before June 2025
    logged_every_10 = parse_log(read("torchtitan_llama3_8b_bf16_h100.log"), options={"log_interval": 10})
    # Steps 1, 10, 20, 30, 40: 1, then 10 − 1 = 9, then 10 each.
    assert [p.iterations_in_interval for p in logged_every_10.points] == [1, 9, 10, 10, 10]


def test_wps_lines_of_2024() -> None:
    # Built: the real Llama 3 step-10 line in the format torchtitan printed from March to November 2024 (train.py at
    # e5d1b8915: `wps: {round(wps):,}  mfu: {mfu:.2f}%`, no `[titan]`, no tflops); wps was per device too.
    line = H100_10.replace("[titan] ", "").replace("tps:", "wps:").replace("  tflops: 367.39", "")
    assert line.endswith("wps: 6,344  mfu: 37.15%")
    parsed = parse_log(line)
    assert parsed.format == "torchtitan"
    (point,) = parsed.points
    assert (point.iteration, point.loss, point.tokens_per_second_per_accelerator) == (10, 10.426, 6344)
    assert point.tflops_per_accelerator is None


def test_nan_loss_is_none_not_zero() -> None:
    # Built: the real bf16 step-10 line with the loss as `f"{nan:8.5f}"` prints it.
    assert "loss: 10.22765" in BF16_10
    found = feed_one(BF16_10.replace("loss: 10.22765", "loss:      nan"))
    assert isinstance(found, Point)
    assert found.loss is None
    assert found.nan_iterations == 1
    assert found.tokens_per_second_per_accelerator == 8378  # the rest of the line is still read


def test_cut_lines_are_problems() -> None:
    cleaned = clean_line(BF16_10)
    parser = TorchtitanParser()
    # Built: the real line cut inside tps (`tps: 8,3` is not 83), and inside the mfu value (`35.0` without its `%`).
    for cut in (cleaned[: cleaned.index("tps: 8,378") + len("tps: 8,3")], cleaned[: cleaned.index("35.00%") + 4]):
        assert TorchtitanParser.matches(cut)
        found = parser.feed(cut, 45)
        assert isinstance(found, Problem)
        assert found.line == 45
        assert "mfu" in found.message


def test_validation_lines_are_not_points() -> None:
    # Built: the real step-10 line in the validator's format (metrics.py's log_validation: `validate step:`, loss,
    # memory, tps).
    line = clean_line(H100_10).replace("step:", "validate step:").split("  tflops")[0]
    assert "validate step: 10  loss: 10.4260" in line
    assert not TorchtitanParser.matches(line)
    assert TorchtitanParser().feed(line, 1) is None


def test_eight_ranks_without_prefix_are_one_point() -> None:
    # Built: the real step-10 line as eight ranks print it when torchrun does not filter or prefix them.
    text = "\n".join([clean_line(BF16_10)] * 8)
    parsed = parse_log(text)
    assert [p.iteration for p in parsed.points] == [10]
    assert parsed.other_lines == 7


@pytest.mark.parametrize("prefix", ["3: ", "[1,0]<stdout>:", "[default0]:"])
def test_rank_prefixes_through_parse_log(prefix: str) -> None:
    # Built: the real step-10 line (its own `[rank0]:` removed) behind srun's, Open MPI's and torchrun's labels.
    line = prefix + BF16_10.removeprefix("[rank0]:")
    parsed = parse_log(line)
    assert parsed.format == "torchtitan"
    assert [(p.iteration, p.tokens_per_second_per_accelerator) for p in parsed.points] == [(10, 8378)]


def test_settings_of_the_2025_setup_lines() -> None:
    # Real: pytorch/torchtitan output.txt @ b5a03351fdcf2a529b7edab432c5b09ba495f509 (a 4-stage pipeline test run of
    # January 2025), lines 22 and 99.
    parser = TorchtitanParser()
    for line in (
        "[rank0]:2025-01-10 14:53:53,411 - root - INFO - Building 1-D device mesh with ['pp'], [4]",
        "[rank0]:2025-01-10 14:53:57,249 - root - INFO - Training starts at step 1, with local batch size 16, "
        "global batch size 16, sequence length 64, total steps 10 (warmup 2)",
    ):
        assert parser.feed(clean_line(line), 1) is None
    assert parser.settings == {"world_size": 4, "global_batch_size": 16, "seq_length": 64}


def test_settings_of_the_2026_token_budget_line() -> None:
    # Built from trainer.py's format string since August 2026 (no public log of it yet): no batch size is printed.
    parser = TorchtitanParser()
    line = (
        "[titan] 2026-08-21 10:00:00,000 - root - INFO - Trainer is initialized with 16384 tokens per DP rank, "
        "131072 tokens per train step, gradient accumulation steps 1, maximum context length 2048, total steps 10 "
        "(warmup 2)"
    )
    assert parser.feed(line, 1) is None
    assert parser.settings == {"tokens_per_step": 131072, "seq_length": 2048}


@pytest.mark.parametrize(
    "line",
    [
        # Megatron: tests/samples/training/megatron_core_moe_h100.log, line 1 (start).
        " [2024-04-06 03:02:12] iteration       71/     100 | consumed samples:         9088 | elapsed time per "
        "iteration (ms): 5361.6 | throughput per GPU (TFLOP/s/GPU): 243.6 | learning rate: 1.420000E-05 |",
        # Hugging Face Trainer: tests/samples/training/hf_trainer_esm2_ddp_srun.log.
        "0: {'loss': 2.9859, 'grad_norm': 0.9704080820083618, 'learning_rate': 4.175257731958763e-05, 'epoch': 0.16}",
        # DeepSpeed: tests/samples/training/deepspeed_steps_nan.log, lines 1 and 2.
        "steps: 16 loss: 0.7332 iter time (s): 3.181 samples/sec: 0.314",
        "[2026-07-30 09:16:29,681] [INFO] [logging.py:123:log_dist] [Rank 0] step=17, skipped=0, lr=[1e-06], mom=[0.0]",
        # NeMo 2: tests/samples/training/nemo2_perf_tflops.log, line 2.
        "Training epoch 0, iteration 74/99 | lr: 1.124e-05 | global_batch_size: 128 | global_step: 74 | "
        "max_memory_reserved: 64286097408 | max_memory_allocated: 62777982976 | reduced_train_loss: 11.87 | "
        "train_step_timing in s: 8.768 | TFLOPS_per_GPU: 865.7 | consumed_samples: 9600",
        # torchtitan's own lines around the metrics lines.
        "[rank0]:[titan] 2026-05-19 14:08:32,551 - root - INFO - Synchronizing and adjusting timeout for all "
        "ProcessGroups to 0:01:40",
    ],
)
def test_other_lines_do_not_match(line: str) -> None:
    cleaned = clean_line(line)
    assert not TorchtitanParser.matches(cleaned)
    assert TorchtitanParser().feed(cleaned, 1) is None


def test_torchtitan_lines_are_not_nemo_lines() -> None:
    for line in (BF16_10, H100_10):
        assert not NemoParser.matches(clean_line(line))
