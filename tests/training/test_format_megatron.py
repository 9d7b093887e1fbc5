"""The Megatron parser on real logs (tests/samples/training/, origins in SOURCES.md).

Every figure below is read by hand from the sample's own line, and the arithmetic is in the comment beside it.
Variants no public log shows (rank prefixes, a cut line, a microsecond timestamp, a printed nan) are built here from
a real line, and each says so.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.training.samples import by_iteration, lines_of, read
from workloads.training.logs import FORMATS, parse_log
from workloads.training.logs.base import Problem, clean_line
from workloads.training.logs.megatron import MegatronParser

# The H100 Mixtral run's iteration 71, verbatim (NVIDIA/Megatron-LM#756): the base of the built variants below.
H100_71 = lines_of("megatron_core_moe_h100.log")[0]


def test_registered_under_its_name() -> None:
    assert FORMATS["megatron"] is MegatronParser
    assert MegatronParser.label == "Megatron-LM / Megatron-Core / Megatron-DeepSpeed"


# --- Megatron-LM, 2021: argument dump, no timestamp, skipped iterations, validation lines ---------------------------


def test_megatron_lm_2021_points_settings_and_counters() -> None:
    parsed = parse_log(read("megatron_lm_2021_gpt2_32gpu.log"))
    assert parsed.format == "megatron"
    assert parsed.problems == []
    # One line every 10 iterations from 10 to 200.
    assert [p.iteration for p in parsed.points] == list(range(10, 201, 10))
    # The 230 lines less the 20 points: arguments, memory reports, timers, validation, Slurm.
    assert parsed.other_lines == 230 - 20
    # From the argument dump (`  seq_length ...... 1024`, ...) and the iteration lines' `/    1000`.
    assert parsed.settings == {
        "seq_length": 1024,
        "global_batch_size": 4,
        "micro_batch_size": 1,
        "world_size": 32,
        "train_iters": 1000,
        "log_interval": 10,
    }
    points = by_iteration(parsed.points)

    first = points[10]
    # All 10 iterations skipped while fp16 searched its loss scale: no `lm loss` printed, so no loss (not zero).
    assert first.skipped_iterations == 10
    assert first.nan_iterations == 0
    assert first.loss is None
    assert first.learning_rate == 0.0  # `learning rate: 0.000E+00`, a real zero
    assert first.consumed_samples == 40
    assert first.global_batch_size == 4
    assert first.step_seconds == pytest.approx(3.1713)  # 3171.3 ms / 1000
    assert first.grad_norm is None  # not printed while every step was skipped
    assert first.at is None  # no timestamp in 2021
    assert first.tflops_per_accelerator is None
    assert first.iterations_in_interval == 10  # log_interval 10, from the start

    thirty = points[30]
    assert thirty.loss == pytest.approx(26.48119)  # `lm loss: 2.648119E+01`
    assert thirty.grad_norm == pytest.approx(67.033)
    assert thirty.skipped_iterations == 1
    assert thirty.learning_rate == pytest.approx(1.5e-4)  # `1.500E-04`
    assert thirty.step_seconds == pytest.approx(1.6137)  # 1613.7 ms / 1000
    assert thirty.iterations_in_interval == 10  # 30 - 20, within the interval of 10

    last = points[200]
    assert last.loss == pytest.approx(7.534106)
    assert last.consumed_samples == 800  # 200 iterations × 4 samples
    assert last.losses == {}


def test_megatron_lm_2021_validation_lines_are_not_points() -> None:
    parsed = parse_log(read("megatron_lm_2021_gpt2_32gpu.log"))
    # `validation loss at iteration 100 | lm loss value: 8.095942E+00 | ...` names iteration 100 but is no point:
    # iteration 100's point is the training line's loss, not the validation value.
    hundred = [p for p in parsed.points if p.iteration == 100]
    assert len(hundred) == 1
    assert hundred[0].loss == pytest.approx(8.085403)  # the training line's `lm loss: 8.085403E+00`
    validation = next(line for line in lines_of("megatron_lm_2021_gpt2_32gpu.log") if "validation loss" in line)
    assert not MegatronParser.matches(validation)
    assert MegatronParser().feed(validation, 1) is None


# --- Megatron-DeepSpeed (microsoft), 2022 MoE: consumed tokens, moe loss, TFLOPs, DeepSpeed lines in between --------


def test_megatron_deepspeed_moe_points() -> None:
    parsed = parse_log(read("megatron_deepspeed_moe_4xv100.log"))
    assert parsed.format == "megatron"
    assert parsed.problems == []
    assert [p.iteration for p in parsed.points] == list(range(10, 111, 10))
    assert parsed.settings == {
        "seq_length": 2048,
        "global_batch_size": 256,
        "micro_batch_size": 4,
        "world_size": 4,
        "train_iters": 1716613,
        "log_interval": 10,
    }
    points = by_iteration(parsed.points)
    ten = points[10]
    assert ten.consumed_samples == 2560  # 10 iterations × 256
    assert ten.tokens == 5242880  # `consumed tokens:      5242880` = 2560 samples × 2048 tokens
    assert ten.loss == pytest.approx(10.68575)  # `lm loss: 1.068575E+01`
    assert ten.losses == {"moe loss": pytest.approx(0.07954595)}  # `moe loss: 7.954595E-02`
    assert ten.step_seconds == pytest.approx(7.3827)  # 7382.7 ms / 1000
    assert ten.tflops_per_accelerator == pytest.approx(21.54)  # `TFLOPs: 21.54`
    assert ten.learning_rate == pytest.approx(5.662e-6)
    assert ten.grad_norm is None  # this run prints no grad norm
    assert ten.tokens_per_second_per_accelerator is None  # no `tgs` in this version
    assert ten.iterations_in_interval == 10
    # The interval after the validation at 100 was slower: 9278.9 ms / 1000.
    assert points[110].step_seconds == pytest.approx(9.2789)
    assert points[110].tflops_per_accelerator == pytest.approx(17.14)


def test_deepspeed_engine_lines_between_are_not_points() -> None:
    lines = lines_of("megatron_deepspeed_moe_4xv100.log")
    step = next(line for line in lines if "step=10, skipped=0" in line)
    timer = next(line for line in lines if "RunningAvgSamplesPerSec" in line)
    for line in (step, timer):
        assert not MegatronParser.matches(line)
        assert MegatronParser().feed(clean_line(line), 1) is None


# --- BigScience's Megatron-DeepSpeed (BLOOM-176B): seconds, torchrun rank prefix, a chronicle's `[...]` ---------------


def test_bloom_seconds_rank_prefix_and_loss_spike() -> None:
    parsed = parse_log(read("megatron_deepspeed_bloom176b.log"))
    assert parsed.format == "megatron"
    assert parsed.problems == []
    assert [p.iteration for p in parsed.points] == [*range(31214, 31223), 31250, 31251]
    assert parsed.other_lines == 1  # the chronicle's `[...]`
    assert parsed.settings == {"train_iters": 115311}
    points = by_iteration(parsed.points)
    first = points[31214]
    assert first.step_seconds == pytest.approx(106.46)  # `elapsed time per iteration (s): 106.46`, already seconds
    assert first.tokens == 97829879808
    assert first.consumed_samples == 47768496
    # Cumulative tokens are 2048 tokens a sample: 97829879808 / 47768496 = 2048.
    assert first.tokens == first.consumed_samples * 2048
    assert first.tflops_per_accelerator == pytest.approx(147.29)
    assert first.global_batch_size == 2048
    # The spike: loss 2.241558 -> 2.345279 -> 5.098124 while the grad norm went 15.886 -> 145.119 -> 960.351.
    assert points[31219].loss == pytest.approx(5.098124)
    assert points[31219].grad_norm == pytest.approx(960.351)
    # The chronicle cut iterations 31223-31249: without the argument dump, the gap says nothing of an interval.
    assert points[31250].iterations_in_interval == 1


# --- Megatron-Core, timestamps, TFLOP/s and MoE/MTP losses -----------------------------------------------------------


def test_megatron_core_ling_timestamps_and_moe_losses() -> None:
    parsed = parse_log(read("megatron_core_moe_ling_mini_v2.log"))
    assert parsed.format == "megatron"
    assert parsed.problems == []
    assert [p.iteration for p in parsed.points] == list(range(1, 11))
    assert parsed.other_lines == 1  # `[Rank 0] (after 1 iterations) memory (MB) | ...`
    assert parsed.settings == {"train_iters": 2000}
    points = by_iteration(parsed.points)
    first = points[1]
    # ` [2025-09-05 16:08:14] iteration ...`: Megatron's naive local time, taken as UTC.
    assert first.at == datetime(2025, 9, 5, 16, 8, 14, tzinfo=UTC)
    assert first.at.tzinfo is not None
    assert first.step_seconds == pytest.approx(79.4899)  # 79489.9 ms / 1000: the first iteration's warm-up
    assert first.tflops_per_accelerator == pytest.approx(18.0)
    assert first.loss == pytest.approx(2.605958)
    assert first.losses == {"z_loss": pytest.approx(10.91659), "mtp_1 loss": pytest.approx(2.828435)}
    assert first.learning_rate == pytest.approx(2.999998e-05)
    assert first.consumed_samples == 128
    assert first.tokens is None  # Megatron-Core prints no tokens: the ingest uses samples × seq_length
    tenth = points[10]
    assert tenth.at == datetime(2025, 9, 5, 16, 9, 51, tzinfo=UTC)
    assert tenth.step_seconds == pytest.approx(10.7206)  # 10720.6 ms / 1000
    assert tenth.tflops_per_accelerator == pytest.approx(133.7)
    assert tenth.consumed_samples == 1280  # 10 × 128
    assert tenth.grad_norm == pytest.approx(0.144)


def test_megatron_core_h100_mixtral_load_balancing_loss() -> None:
    parsed = parse_log(read("megatron_core_moe_h100.log"))
    assert parsed.format == "megatron"
    assert [p.iteration for p in parsed.points] == [71, 72, 73]
    seventy_one, _seventy_two, seventy_three = parsed.points
    assert seventy_one.at == datetime(2024, 4, 6, 3, 2, 12, tzinfo=UTC)
    assert seventy_one.losses == {"load_balancing_loss": pytest.approx(1.013377)}
    assert seventy_one.loss == pytest.approx(1.818812)
    assert seventy_one.tflops_per_accelerator == pytest.approx(243.6)
    assert seventy_one.step_seconds == pytest.approx(5.3616)  # 5361.6 ms / 1000
    assert seventy_one.consumed_samples == 9088  # 71 × 128
    assert seventy_one.skipped_iterations == 0
    assert seventy_one.nan_iterations == 0
    # 03:02:24 - 03:02:18 = 6 s between the lines, for a logged 5.8299 s step (5829.9 ms / 1000).
    assert seventy_three.step_seconds == pytest.approx(5.8299)
    assert seventy_three.grad_norm == pytest.approx(1.539)
    assert parsed.settings == {"train_iters": 100}


# --- nan --------------------------------------------------------------------------------------------------------------


def test_nan_grad_norm_is_none_not_zero() -> None:
    parsed = parse_log(read("megatron_deepspeed_nan_grad_norm.log"))
    assert parsed.format == "megatron"
    assert [p.iteration for p in parsed.points] == [5426, 5427, 5428]
    for point in parsed.points:
        assert point.grad_norm is None  # `grad norm: nan`
        assert point.loss is None  # Megatron leaves a nan loss out of the line
        assert point.nan_iterations == 0  # as this fork's counter says
    first = parsed.points[0]
    assert first.tokens == 88899584  # 43408 samples × 2048 (`actual seqlen:  2048`)
    assert first.step_seconds == pytest.approx(4.2479)  # 4247.9 ms / 1000
    assert first.tflops_per_accelerator == pytest.approx(78.36)


def test_printed_nan_loss_and_nan_counter() -> None:
    # Built from the real H100 line: the loss printed `nan` (as forks do) and the counters at 2 and 1.
    line = (
        H100_71.replace("lm loss: 1.818812E+00", "lm loss:       nan")
        .replace("number of skipped iterations:   0", "number of skipped iterations:   2")
        .replace("number of nan iterations:   0", "number of nan iterations:   1")
    )
    (point,) = parse_log(line).points
    assert point.loss is None
    assert point.skipped_iterations == 2
    assert point.nan_iterations == 1
    assert point.losses == {"load_balancing_loss": pytest.approx(1.013377)}  # the other loss is still read
    # Without the counters (a fork that prints neither), the printed nan loss counts one nan iteration.
    bare = line.split(" | number of skipped")[0] + " |"
    (point,) = parse_log(bare).points
    assert point.loss is None
    assert point.nan_iterations == 1
    # -nan and inf are missing values too.
    (point,) = parse_log(H100_71.replace("grad norm: 1.300", "grad norm: -nan")).points
    assert point.grad_norm is None
    (point,) = parse_log(H100_71.replace("grad norm: 1.300", "grad norm: inf")).points
    assert point.grad_norm is None


# --- rank prefixes, timestamps ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["[default7]:", "[rank3]:", "12: ", "[1,0]<stdout>:", "[default0]:[default0]:"])
def test_rank_prefixes_are_read_through_parse_log(prefix: str) -> None:
    # Built: the real H100 lines with each launcher's prefix before them.
    text = "\n".join(prefix + line for line in lines_of("megatron_core_moe_h100.log"))
    parsed = parse_log(text)
    assert parsed.format == "megatron"
    assert [p.iteration for p in parsed.points] == [71, 72, 73]
    assert parsed.points[0].at == datetime(2024, 4, 6, 3, 2, 12, tzinfo=UTC)
    assert parsed.points[0].loss == pytest.approx(1.818812)


def test_the_same_line_from_every_rank_is_one_point() -> None:
    # Built: the last rank's line printed by 8 ranks, as `tee` of all ranks gives.
    text = "\n".join(f"[default{rank}]:{H100_71}" for rank in range(8))
    parsed = parse_log(text)
    assert len(parsed.points) == 1
    assert parsed.other_lines == 7


def test_microsecond_and_zoned_timestamps() -> None:
    # Built: Megatron-LM prints `%Y-%m-%d %H:%M:%S.%f` since 2026 (training.py, "Logging cleanup" #3036).
    (point,) = parse_log(H100_71.replace("[2024-04-06 03:02:12]", "[2024-04-06 03:02:12.987995]")).points
    assert point.at == datetime(2024, 4, 6, 3, 2, 12, 987995, tzinfo=UTC)
    # A zone, when a wrapper prints one, is honoured: 12:02:12 at +09:00 is 03:02:12 UTC.
    (point,) = parse_log(H100_71.replace("[2024-04-06 03:02:12]", "[2024-04-06T12:02:12+09:00]")).points
    assert point.at == datetime(2024, 4, 6, 3, 2, 12, tzinfo=UTC)


# --- garbled lines ----------------------------------------------------------------------------------------------------


def test_a_line_cut_before_its_iteration_is_a_problem_naming_it() -> None:
    # Built: the real line's first 40 characters lost (` [2024-04-06 03:02:12] iteration       7`), as when
    # a log is read from the middle of a line.
    lines = lines_of("megatron_core_moe_h100.log")
    lines[1] = lines[1][40:]
    assert lines[1].startswith("2/     100 | consumed samples:")
    parsed = parse_log("\n".join(lines))
    assert [p.iteration for p in parsed.points] == [71, 73]
    (problem,) = parsed.problems
    assert isinstance(problem, Problem)
    assert problem.line == 2
    assert "iteration number cannot be read" in problem.message


def test_a_line_cut_after_its_iteration_keeps_the_whole_fields() -> None:
    # Built: the real line cut in the middle of `lm loss: 1.818812E+00` (after `1.81`): a value cut short is not read
    # as 1.81, the whole fields before it are, the fields after it are missing.
    cut = H100_71[: H100_71.index("lm loss: ") + len("lm loss: 1.81")]
    (point,) = parse_log(cut).points
    assert point.iteration == 71
    assert point.loss is None
    assert point.losses == {}
    assert point.grad_norm is None
    assert point.global_batch_size == 128
    assert point.tflops_per_accelerator == pytest.approx(243.6)
    assert point.step_seconds == pytest.approx(5.3616)
    # Cut in the exponent: `1.818812E+0` would be 1.818812 rather than 18.18812; it is not read either.
    cut = H100_71[: H100_71.index("lm loss: ") + len("lm loss: 1.818812E+0")]
    (point,) = parse_log(cut).points
    assert point.loss is None


def test_two_lines_run_together_are_a_problem() -> None:
    # Built: two real consecutive lines written into one (the newline lost between two prints).
    first, second = lines_of("megatron_core_moe_h100.log")[:2]
    parsed = parse_log(first + second)
    assert parsed.points == []
    (problem,) = parsed.problems
    assert problem.line == 1
    assert "run together" in problem.message


def test_a_terminal_wrapped_line_keeps_its_head() -> None:
    # Built: the real line wrapped at 220 columns by a terminal copy, as pasted logs often are: the head is a point
    # with the fields it holds whole; the tail is another line, not a point and not a problem.
    head, tail = H100_71[:220], H100_71[220:]
    parsed = parse_log(f"{head}\n{tail}")
    (point,) = parsed.points
    assert point.iteration == 71
    assert point.learning_rate == pytest.approx(1.42e-05)
    assert point.loss is None  # the cut fell in `lm loss`
    assert parsed.problems == []
    assert parsed.other_lines == 1


# --- what is not a Megatron progress line -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        # Hugging Face Trainer's dict line.
        "{'loss': 2.1, 'learning_rate': 1e-05, 'epoch': 0.1}",
        # Megatron's own non-progress lines, in the formats of megatron/training/training.py and checkpointing.py.
        " validation loss at iteration 1000 | lm loss value: 2.151515E+00 | lm loss PPL: 8.598424E+00 | ",
        "saving checkpoint at iteration     100 to /checkpoints/gpt in torch_dist format",
        "  successfully saved checkpoint from iteration     100 to /checkpoints/gpt [ t 1/8, p 1/1 ]",
        " loading checkpoint from /checkpoints/gpt at iteration 1000",
        "(min, max) time across ranks (ms):",
        "    forward-backward ...............................: (5100.12, 5101.40)",
        "[Rank 0] (after 10 iterations) memory (MB) | allocated: 2953.6 | max allocated: 5757.6 | reserved: 7776.0",
        "[after dataloaders are built] datetime: 2022-09-19 01:03:40 ",
        # DeepSpeed's engine line, printed before each Megatron-DeepSpeed iteration line.
        "[2022-09-19 01:04:53,825] [INFO] [logging.py:68:log_dist] [Rank 0] step=10, skipped=0, lr=[5.66e-06]",
    ],
)
def test_other_lines_do_not_match(line: str) -> None:
    assert not MegatronParser.matches(line)
    assert MegatronParser().feed(line, 1) is None


def test_a_log_of_another_format_is_not_detected_as_megatron() -> None:
    text = "{'loss': 2.1, 'learning_rate': 1e-05, 'epoch': 0.1}\n{'loss': 1.9, 'learning_rate': 2e-05, 'epoch': 0.2}\n"
    assert parse_log(text).format != "megatron"


def test_arguments_outside_the_settings_are_ignored_and_none_is_skipped() -> None:
    parser = MegatronParser()
    for line in [
        "  train_iters ..................................... None",
        "  seq_length ...................................... 4096",
        "  num_layers ...................................... 48",
        "  world_size ...................................... 64",
    ]:
        assert parser.feed(line, 1) is None
    assert parser.settings == {"seq_length": 4096, "world_size": 64}


def test_log_interval_from_the_poster_when_the_log_has_no_argument_dump() -> None:
    # The H100 excerpt has no argument dump; told an interval of 10, the first line counts 10, the next ones the gap.
    text = "\n".join(lines_of("megatron_core_moe_h100.log"))
    parsed = parse_log(text, options={"log_interval": 10})
    assert [p.iterations_in_interval for p in parsed.points] == [10, 1, 1]


def test_an_implausible_logged_throughput_is_kept_as_logged() -> None:
    # Built: the real H100 line with the 59,892 TFLOP/s/GPU a program log was reported to show (that log itself was
    # not found). The parser keeps what the log says; workloads.training.figures judges it against the peak.
    line = H100_71.replace("(TFLOP/s/GPU): 243.6", "(TFLOP/s/GPU): 59892.0")
    (point,) = parse_log(line).points
    assert point.tflops_per_accelerator == 59892.0


def test_gpt_neox_order_and_lm_loss_spelling() -> None:
    # Built: the real 2021 line for iteration 30 rewritten in GPT-NeoX's order and names (EleutherAI/gpt-neox,
    # megatron/logging.py @ 018b8a9: `samples/sec` first, `approx flops per GPU`, the loss key `lm_loss`).
    # samples/sec = 4 samples / 1.6137 s = 2.479; the flops figure is an arbitrary one in NeoX's human-readable form.
    line = (
        " samples/sec: 2.479 | iteration       30/    1000 | elapsed time per iteration (ms): 1613.7 |"
        " learning rate: 1.500E-04 | approx flops per GPU: 95.2TFLOPS | lm_loss: 2.648119E+01 |"
        " loss scale: 16384.0 | number of skipped iterations:   1 | number of nan iterations:   0 |"
    )
    parsed = parse_log(line)
    assert parsed.format == "megatron"
    (point,) = parsed.points
    assert point.iteration == 30
    assert point.loss == pytest.approx(26.48119)
    assert point.losses == {}
    assert point.step_seconds == pytest.approx(1.6137)
    assert point.tflops_per_accelerator is None  # `95.2TFLOPS` is a human-readable figure, not read
    assert point.skipped_iterations == 1
