"""The NeMo 2 / Lightning parser on real logs (tests/samples/training/, origins in SOURCES.md).

Every figure below is read by hand from the sample's own line, and the arithmetic is in the comment beside it.
Variants no public log shows (a `\\r`-rewritten bar, a rank prefix, a timestamp, a printed nan, a cut line) are built
here from a real line, and each says so.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.training.samples import by_iteration, lines_of, read
from workloads.training.logs import FORMATS, parse_log
from workloads.training.logs.base import Point, Problem, clean_line
from workloads.training.logs.nemo import NemoParser
from workloads.training.logs.torchtitan import TorchtitanParser


def feed_one(line: str, options: dict | None = None) -> Point | Problem | None:
    return NemoParser(options).feed(clean_line(line), 1)


# The Evo2 fine-tuning's step 17, verbatim (BioNeMo's fine-tuning tutorial): the base of the built variants below.
EVO2_17 = next(line for line in lines_of("nemo2_evo2_7b_finetune.log") if "global_step: 17 |" in line)
# The Stable Diffusion bar's three redraws, verbatim (awsome-distributed-training's NeMo Multimodal README).
BAR_REDRAWS = lines_of("lightning_tqdm_stable_diffusion.log")


def test_registered_under_its_name() -> None:
    assert FORMATS["nemo"] is NemoParser
    assert NemoParser.label == "NeMo 2 / PyTorch Lightning"


# --- NeMo 2's ProgressPrinter ------------------------------------------------------------------------------------


def test_evo2_finetune_points_and_settings() -> None:
    parsed = parse_log(read("nemo2_evo2_7b_finetune.log"))
    assert parsed.format == "nemo"
    assert parsed.problems == []
    # One ProgressPrinter line per step, global steps 0 to 49 (`max_steps=50`), validation and checkpoint lines between.
    assert [p.iteration for p in parsed.points] == list(range(50))
    assert parsed.other_lines == 204 - 50
    # `All distributed processes registered. Starting with 4 processes`; `global_batch_size: 8` on every line.
    assert parsed.settings == {"world_size": 4, "global_batch_size": 8}


def test_evo2_finetune_figures() -> None:
    points = by_iteration(parse_log(read("nemo2_evo2_7b_finetune.log")).points)
    first = points[0]
    # `iteration 0/49 | lr: 0 | global_batch_size: 8 | global_step: 0 | reduced_train_loss: 1.212 |
    # train_step_timing in s: 21.33`: the first line has no consumed_samples yet.
    assert first.consumed_samples is None
    assert first.learning_rate == 0.0
    assert first.loss == 1.212
    assert first.step_seconds == 21.33
    assert first.global_batch_size == 8
    # NeMo 2 counts this step's samples: (global step 1 + 1) × 8 = 16.
    assert points[1].consumed_samples == (1 + 1) * 8 == 16
    # After the validation at step 24, `val_loss: 0.8311` follows on every line; the training loss is still read.
    assert points[25].loss == 1.288
    assert points[25].consumed_samples == (25 + 1) * 8 == 208
    last = points[49]
    # `lr: 1.47e-05 | ... | global_step: 49 | reduced_train_loss: 1.313 | train_step_timing in s: 3.181 |
    # consumed_samples: 400`: 50 steps × 8 = 400.
    assert (last.learning_rate, last.loss, last.step_seconds) == (1.47e-05, 1.313, 3.181)
    assert last.consumed_samples == 50 * 8 == 400
    # No FLOPs callback in this run, no timestamps on the printer's lines.
    assert last.tflops_per_accelerator is None
    assert last.at is None
    assert all(p.iterations_in_interval == 1 and p.nan_iterations == 0 for p in points.values())


def test_resiliency_crash_and_restart_behind_nemo_run_prefixes() -> None:
    parsed = parse_log(read("nemo2_resiliency_crash_restart.log"))
    assert parsed.format == "nemo"
    assert parsed.problems == []
    # Steps 0-15 until the simulated crash, then 10-19 again from the step-9 checkpoint: the step goes back, and the
    # ingest (not the parser) decides what a restart means.
    assert [p.iteration for p in parsed.points] == list(range(16)) + list(range(10, 20))
    assert parsed.settings == {"global_batch_size": 512, "world_size": 8}
    first_run_15 = parsed.points[15]
    # `global_step: 15 | ... | train_step_timing in s: 7.589 | consumed_samples: 8192`: 16 steps × 512 = 8192.
    assert (first_run_15.iteration, first_run_15.consumed_samples) == (15, 16 * 512)
    assert first_run_15.step_seconds == 7.589
    restarted_10 = parsed.points[16]
    # The restarted run prints `consumed_samples: 5632` first: 11 steps × 512 = 5632; its first step is slow (10.26 s).
    assert (restarted_10.iteration, restarted_10.consumed_samples, restarted_10.step_seconds) == (10, 11 * 512, 10.26)
    last = parsed.points[-1]
    assert (last.iteration, last.consumed_samples, last.learning_rate) == (19, 20 * 512, 2.999e-06)


def test_esm2_srun_labels_through_parse_log() -> None:
    parsed = parse_log(read("nemo2_esm2_650m_srun.log"))
    assert parsed.format == "nemo"
    # `0: Training epoch ...` then ` 0: Training epoch ...`: srun's label, with and without a leading space.
    assert [p.iteration for p in parsed.points] == list(range(28, 35))
    step_28 = parsed.points[0]
    # `global_step: 28 | reduced_train_loss: 2.778 | train_step_timing in s: 0.189 | consumed_samples: 928`:
    # 29 steps × 32 = 928.
    assert (step_28.loss, step_28.step_seconds, step_28.consumed_samples) == (2.778, 0.189, 29 * 32)
    assert parsed.points[-1].consumed_samples == 35 * 32 == 1120


def test_perf_run_tflops_per_gpu() -> None:
    parsed = parse_log(read("nemo2_perf_tflops.log"))
    assert parsed.format == "nemo"
    assert [p.iteration for p in parsed.points] == [74, 75, 76]
    assert parsed.other_lines == 2  # the block's two `...`
    step_74 = parsed.points[0]
    # `TFLOPS_per_GPU: 865.7 | consumed_samples: 9600`: 75 steps × 128 = 9600.
    assert step_74.tflops_per_accelerator == 865.7
    assert step_74.consumed_samples == 75 * 128
    assert step_74.step_seconds == 8.768
    assert [p.tflops_per_accelerator for p in parsed.points] == [865.7, 867.7, 866.9]


def test_timestamp_before_the_printer_line() -> None:
    # Built: a launcher's ISO timestamp before the real step-17 line (no public sample has one).
    found = feed_one("[2025-10-17T11:32:59+08:00] " + EVO2_17)
    assert isinstance(found, Point)
    assert found.at == datetime(2025, 10, 17, 3, 32, 59, tzinfo=UTC)  # 11:32:59 at +08:00
    naive = feed_one("2025-06-25 17:37:05 " + EVO2_17)
    assert isinstance(naive, Point)
    assert naive.at == datetime(2025, 6, 25, 17, 37, 5, tzinfo=UTC)  # no zone: taken as UTC


def test_nan_loss_is_none_not_zero() -> None:
    # Built: the real step-17 line with its loss printed as ProgressPrinter prints a nan (`f"{nan:.4}"` is `nan`).
    assert "reduced_train_loss: 1.254 |" in EVO2_17
    found = feed_one(EVO2_17.replace("reduced_train_loss: 1.254", "reduced_train_loss: nan"))
    assert isinstance(found, Point)
    assert found.loss is None
    assert found.nan_iterations == 1
    assert found.step_seconds == 3.171  # the rest of the line is still read


def test_cut_or_garbled_printer_lines_are_problems() -> None:
    parser = NemoParser()
    # Built: the real step-17 line cut before `global_step`, and cut inside its value (`global_step: 1` of 17).
    before = EVO2_17[: EVO2_17.index("global_step")]
    assert NemoParser.matches(before)
    found = parser.feed(before, 7)
    assert isinstance(found, Problem)
    assert found.line == 7
    assert "global_step" in found.message
    inside = EVO2_17[: EVO2_17.index("global_step: 17") + len("global_step: 1")]
    assert isinstance(parser.feed(inside, 8), Problem)
    # Cut later, inside a key: the values before the cut are whole and kept.
    later = EVO2_17[: EVO2_17.index("train_step_timing") + 9]
    found = parser.feed(later, 9)
    assert isinstance(found, Point)
    assert (found.iteration, found.loss, found.step_seconds) == (17, 1.254, None)


def test_log_interval_leaves_the_averaged_consumed_samples_out() -> None:
    # The poster says the printer averages 2 steps a line: consumed_samples is then a mean, not the count at the step.
    found = feed_one(EVO2_17, options={"log_interval": 2})
    assert isinstance(found, Point)
    assert found.iterations_in_interval == 2
    assert found.consumed_samples is None
    assert found.loss == 1.254


def test_rank_prefixes_through_parse_log() -> None:
    # Built: the real step-17 line behind torchrun's and Open MPI's prefixes.
    for prefix in ("[default0]:", "[1,0]<stdout>:", "3: "):
        parsed = parse_log(prefix + EVO2_17)
        assert parsed.format == "nemo"
        assert [(p.iteration, p.consumed_samples) for p in parsed.points] == [(17, (17 + 1) * 8)]


# --- Lightning's tqdm bar ----------------------------------------------------------------------------------------


def test_stable_diffusion_bar_redraws() -> None:
    parsed = parse_log(read("lightning_tqdm_stable_diffusion.log"))
    assert parsed.format == "nemo"
    assert parsed.problems == []
    # Three redraws: the first two both at `global_step=1.000` with the same values (the second is counted with the
    # other lines, as another copy of the same step), the third at 2.
    assert [p.iteration for p in parsed.points] == [1, 2]
    assert parsed.other_lines == 1
    step_1, step_2 = parsed.points
    # `reduced_train_loss=1.000, lr=8.19e-9, global_step=1.000, consumed_samples=8192.0`: NeMo 1 counts the samples
    # of the steps before this one (1 × 8192).
    assert (step_1.loss, step_1.learning_rate, step_1.consumed_samples) == (1.0, 8.19e-9, 8192)
    assert (step_2.learning_rate, step_2.consumed_samples) == (1.64e-8, 2 * 8192)
    assert step_1.step_seconds is None  # no TimingCallback in that run


def test_carriage_return_rewrites() -> None:
    # Built: the three real redraws written the way tqdm writes them to a file, `\r` before each, in one line.
    line = "".join("\r" + redraw for redraw in BAR_REDRAWS)
    # parse_log feeds each redraw of the line (all numbered line 1): the repeated step-1 redraw is a copy.
    parsed = parse_log(line)
    assert parsed.format == "nemo"
    assert [(p.iteration, p.learning_rate) for p in parsed.points] == [(1, 8.19e-9), (2, 1.64e-8)]
    assert parsed.other_lines == 1  # the copy (the empty text before the first `\r` is not a line)
    assert {p.line for p in parsed.points} == {1}
    # Fed whole (a caller splitting at `\n` only), the line gives its last redraw.
    found = feed_one(line)
    assert isinstance(found, Point)
    assert (found.iteration, found.learning_rate) == (2, 1.64e-8)
    # The last redraw cut (the file ends while tqdm writes): the last complete one before it is read.
    cut = "\r".join([*BAR_REDRAWS[:2], BAR_REDRAWS[2][:70]])
    found = feed_one(cut)
    assert isinstance(found, Point)
    assert (found.iteration, found.learning_rate) == (1, 8.19e-9)
    # Nothing complete at all: a problem.
    found = feed_one(BAR_REDRAWS[0][:120])
    assert isinstance(found, Problem)
    assert "cut" in found.message


def test_rounded_global_step_from_the_bar_count() -> None:
    # Real: aws-samples/awsome-distributed-training, 3.test_cases/megatron/nemo1.0/EKS/README.md @
    # 7217859f67bc693c52ff175ccc6082c41dbd7a1b line 303: NeMo 1's MegatronProgressBar at 2000/603000 prints
    # `global_step=2e+3`, then the validation bar's leftover.
    line = (
        "Epoch 0: :   0%|          | 2000/603000 [1:03:17<317:00:58, v_num=, reduced_train_loss=2.600, "
        "global_step=2e+3, consumed_samples=1.28e+6, train_step_timing in s=1.900, val_loss=2.800]"
        "dation DataLoader 0: : 51it [00:20,  2.53it/s]"
    )
    found = feed_one(line)
    assert isinstance(found, Point)
    # The count 2000 is the global step + 1; 1999 rounds to 2e+3 at 3 significant digits, so the step is 1999.
    assert found.iteration == 2000 - 1
    assert found.consumed_samples is None  # `1.28e+6` is rounded: left out, not guessed
    assert (found.loss, found.step_seconds) == (2.6, 1.9)


def test_rounded_global_step_lightning_bar_is_a_problem() -> None:
    parsed = parse_log(read("lightning_tqdm_esm1nv.log"))
    assert parsed.format == "nemo"
    assert parsed.points == []
    # `34103/1100000 [...] global_step=3.1e+4`: Lightning's own bar counts micro-batches (34102 is not 3.1e+4), so the
    # step of each redraw is unknown: four problems, each naming its line.
    assert [p.line for p in parsed.problems] == [1, 2, 3, 4]
    assert "3.1e+4" in parsed.problems[0].message


def test_nan_loss_in_a_bar() -> None:
    # Built: the real first redraw with its loss printed as Lightning pads a nan (`nan` + `.0`).
    found = feed_one(BAR_REDRAWS[0].replace("reduced_train_loss=1.000", "reduced_train_loss=nan.0"))
    assert isinstance(found, Point)
    assert found.loss is None
    assert found.nan_iterations == 1
    assert found.iteration == 1


def test_seq_length_from_nemo1_config_dump() -> None:
    # Built: a line of NeMo 1's Hydra config dump (`model:` block), which no sample here contains.
    parser = NemoParser()
    assert parser.feed("  encoder_seq_length: 2048", 1) is None
    assert parser.settings == {"seq_length": 2048}


# --- What is not a NeMo line -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        # Megatron: tests/samples/training/megatron_core_moe_h100.log, line 1 (start).
        " [2024-04-06 03:02:12] iteration       71/     100 | consumed samples:         9088 | elapsed time per "
        "iteration (ms): 5361.6 | throughput per GPU (TFLOP/s/GPU): 243.6 | learning rate: 1.420000E-05 |",
        # Hugging Face Trainer: tests/samples/training/hf_trainer_esm2_ddp_srun.log.
        "0: {'loss': 2.9859, 'grad_norm': 0.9704080820083618, 'learning_rate': 4.175257731958763e-05, 'epoch': 0.16}",
        # DeepSpeed: tests/samples/training/deepspeed_steps_nan.log, line 1.
        "steps: 16 loss: 0.7332 iter time (s): 3.181 samples/sec: 0.314",
        # torchtitan: tests/samples/training/torchtitan_llama3_8b_bf16_h100.log, line 2.
        "    [rank0]:[titan] 2025-06-04 11:02:49,027 - root - INFO - step: 10  loss: 10.4260  memory: "
        "30.89GiB(32.51%)  tps: 6,344  tflops: 367.39  mfu: 37.15%",
        # NeuronX Distributed Training's bar (tests/samples/training/neuron_nxdt_llama3_70b_pretraining.log, line 1):
        # the neuron format's.
        "Epoch 0:   3%|▎         | 3/91 [16:05<7:52:06, 321.89s/it, loss=6.7, v_num=2, reduced_train_loss=13.40, "
        "lr=7.5e-9, parameter_norm=5536.0, global_step=1.000, consumed_samples=2048.0]",
        # NeMo's own lines around the progress lines (the Evo2 sample).
        "Epoch 0, global step 24: 'val_loss' was not in top 5",
        "Validation: iteration 20/20",
    ],
)
def test_other_lines_do_not_match(line: str) -> None:
    cleaned = clean_line(line)
    assert not NemoParser.matches(cleaned)
    assert NemoParser().feed(cleaned, 1) is None


def test_nemo_lines_are_not_torchtitan_lines() -> None:
    for line in [EVO2_17, *BAR_REDRAWS]:
        assert not TorchtitanParser.matches(clean_line(line))
