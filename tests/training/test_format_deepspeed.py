"""The DeepSpeed parser on real logs (tests/samples/training/, origins in SOURCES.md).

Every figure below is read by hand from the sample's own line, and the arithmetic is in the comment beside it.
Variants no public log shows (a cut line, extra losses, a time zone) are built here from a real line, and each says so.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from tests.training.samples import by_iteration, lines_of, read
from workloads.training.logs import FORMATS, parse_log
from workloads.training.logs.base import Problem, clean_line
from workloads.training.logs.deepspeed import DeepSpeedParser

# diffusion-pipe's step 17, verbatim (tdrussell/diffusion-pipe#531): the engine line, then the `steps:` line.
ENGINE_17, STEPS_17 = lines_of("deepspeed_steps_nan.log")[1:3]


def test_registered_under_its_name() -> None:
    assert FORMATS["deepspeed"] is DeepSpeedParser
    assert DeepSpeedParser.label == "DeepSpeed"


# --- the pipeline engine's `steps:` lines, with nan losses ---------------------------------------------------------


def test_nan_losses_are_none_and_counted() -> None:
    parsed = parse_log(read("deepspeed_steps_nan.log"))
    assert parsed.format == "deepspeed"
    assert parsed.problems == []
    assert [p.iteration for p in parsed.points] == list(range(16, 24))
    # 15 lines: 8 `steps:` lines and the engine lines of steps 17 to 23, which complete their step's point.
    assert parsed.other_lines == 15 - 8
    points = by_iteration(parsed.points)
    # `steps: 16 loss: 0.7332 iter time (s): 3.181 samples/sec: 0.314`, the excerpt's first line: no engine line.
    assert points[16].loss == 0.7332
    assert points[16].step_seconds == 3.181
    assert points[16].losses == {"samples_per_second": 0.314}
    assert points[16].learning_rate is None and points[16].at is None
    # `[2026-07-30 09:16:29,681] [INFO] [logging.py:123:log_dist] [Rank 0] step=17, skipped=0, lr=[1e-06], mom=[0.0]`
    # then `steps: 17 loss: 0.5994 iter time (s): 3.162 samples/sec: 0.316`: one point.
    assert points[17].loss == 0.5994
    assert points[17].learning_rate == 1e-06
    assert points[17].at == datetime(2026, 7, 30, 9, 16, 29, 681_000, tzinfo=UTC)
    assert points[17].step_seconds == 3.162
    assert points[17].skipped_iterations == 0
    assert points[17].nan_iterations == 0
    # `steps: 18 loss: nan iter time (s): 3.235 samples/sec: 0.309` and the five after it.
    for step in range(18, 24):
        assert points[step].loss is None
        assert points[step].nan_iterations == 1
    assert points[18].step_seconds == 3.235


def test_tokens_per_second_with_the_sequence_length() -> None:
    parsed = parse_log(read("deepspeed_steps_nan.log"), options={"seq_length": 4096})
    # 0.316 samples/s × 4096 tokens = 1294.336 tokens/s
    assert by_iteration(parsed.points)[17].tokens_per_second == pytest.approx(1294.336)


# --- Megatron-DeepSpeed with pipeline parallelism: DeepSpeed's lines come first ----------------------------------


def test_megatron_deepspeed_pipeline_is_megatrons() -> None:
    # DeepSpeed's `steps: 1 ...` comes before Megatron's `iteration 1/ 2500 | ...`, but Megatron comes first in the
    # detection order, and its line says more (tokens, grad norm, TFLOP/s).
    assert parse_log(read("deepspeed_megatron_llama_pp.log")).format == "megatron"


def test_megatron_deepspeed_pipeline_read_from_the_deepspeed_lines() -> None:
    parsed = parse_log(read("deepspeed_megatron_llama_pp.log"), format="deepspeed")
    assert parsed.format == "deepspeed"
    assert parsed.problems == []
    # The README elides steps 4 to 2497 with `...`.
    assert [p.iteration for p in parsed.points] == [1, 2, 3, 2498, 2499, 2500]
    assert parsed.other_lines == 31 - 6
    # DeepSpeed's config print: `steps_per_print .............. 1`, `train_batch_size ............. 32`.
    assert parsed.settings == {"steps_per_print": 1, "global_batch_size": 32}
    points = by_iteration(parsed.points)
    # `[2023-08-15 06:31:44,231] ... [Rank 0] step=2, skipped=1, lr=[1.5e-07, 1.5e-07], mom=[...]`
    # `steps: 2 loss: 10.6521 iter time (s): 1.337 samples/sec: 23.934`
    assert points[2].loss == 10.6521
    assert points[2].learning_rate == 1.5e-07
    assert points[2].step_seconds == 1.337
    assert points[2].losses == {"samples_per_second": 23.934}
    assert points[2].at == datetime(2023, 8, 15, 6, 31, 44, 231_000, tzinfo=UTC)
    # Skipped steps: `step=1, skipped=1` is the text's first counter (the step's own overflow, as the next line
    # `Reducing dynamic loss scale from 65536 to 32768.0` says); then 1 - 1 = 0.
    assert points[1].skipped_iterations == 1
    assert points[1].learning_rate == 0.0
    assert points[2].skipped_iterations == 0
    assert points[3].skipped_iterations == 0
    # `step=2499, skipped=1585`: 1585 - 1 = 1584 since step 3, most of them in the elided steps; `step=2500,
    # skipped=1586`: 1586 - 1585 = 1.
    assert points[2499].skipped_iterations == 1584
    assert points[2500].skipped_iterations == 1
    # `steps: 2498 loss: 12.6747 ...` has no engine line in the excerpt.
    assert points[2498].learning_rate is None
    assert points[2498].at is None
    assert points[2498].loss == 12.6747


def test_tokens_per_second_from_the_megatron_sequence_length() -> None:
    # Built: Megatron's argument dump line of the same run (`seq_length ...... 2048`, llama-note.md line 328) in front.
    text = "  seq_length ...................................... 2048\n" + read("deepspeed_megatron_llama_pp.log")
    parsed = parse_log(text, format="deepspeed")
    assert parsed.settings["seq_length"] == 2048
    # 23.934 samples/s × 2048 = 49016.832 tokens/s
    assert by_iteration(parsed.points)[2].tokens_per_second == pytest.approx(49016.832)


# --- engine and timer lines only (DeepSpeed-Chat): read when the format is named ---------------------------------


def test_engine_lines_alone_are_not_detected() -> None:
    assert parse_log(read("deepspeed_chat_opt13b_sft.log")).format is None


def test_deepspeed_chat_engine_and_timer_lines() -> None:
    parsed = parse_log(read("deepspeed_chat_opt13b_sft.log"), format="deepspeed")
    assert parsed.format == "deepspeed"
    assert parsed.problems == []
    assert [p.iteration for p in parsed.points] == list(range(10, 101, 10))
    assert parsed.other_lines == 31 - 10
    # `--max_seq_len 512` on the command line.
    assert parsed.settings == {"seq_length": 512}
    first = parsed.points[0]
    # `[2023-04-18 01:46:59,142] ... [Rank 0] step=10, skipped=6, lr=[9.649992967150629e-06, ...], mom=[...]`, after
    # six `OVERFLOW! Rank 0 Skipping step.` lines.
    assert first.skipped_iterations == 6
    assert first.learning_rate == 9.649992967150629e-06
    assert first.at == datetime(2023, 4, 18, 1, 46, 59, 142_000, tzinfo=UTC)
    # `epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=173.4455644119137,
    #  CurrSamplesPerSec=171.97903593624417, ...`: 171.979 samples/s × 512 = 88053.27 tokens/s
    assert first.losses == {"samples_per_second": 171.97903593624417}
    assert first.tokens_per_second == pytest.approx(171.97903593624417 * 512)
    assert first.loss is None
    assert first.step_seconds is None  # no global batch in the excerpt
    # `step=20, skipped=6`: 6 - 6 = 0.
    assert parsed.points[1].skipped_iterations == 0


def test_step_time_from_the_timer_and_the_global_batch() -> None:
    parsed = parse_log(read("deepspeed_chat_opt13b_sft.log"), format="deepspeed", options={"global_batch_size": 128})
    # 128 samples / 171.97903593624417 samples/s = 0.7443 s
    assert parsed.points[0].step_seconds == pytest.approx(128 / 171.97903593624417)


def test_old_timer_format() -> None:
    # Real: two consecutive lines of deepspeedai/DeepSpeed#1825 (DeepSpeed of March 2022).
    text = (
        "[2022-03-11 02:06:58,985] [INFO] [logging.py:69:log_dist] [Rank 0] step=40, skipped=2, lr=[5e-05], "
        "mom=[[0.9, 0.999]]\n"
        "[2022-03-11 02:06:58,985] [INFO] [timer.py:189:stop] 0/40, SamplesPerSec=83.48609168106144, "
        "MemAllocated=0.26GB, MaxMemAllocated=9.02GB\n"
    )
    parsed = parse_log(text, format="deepspeed")
    assert len(parsed.points) == 1
    point = parsed.points[0]
    assert point.iteration == 40
    assert point.skipped_iterations == 2
    assert point.learning_rate == 5e-05
    assert point.losses == {"samples_per_second": 83.48609168106144}


# --- variants built from real lines ------------------------------------------------------------------------------


def test_a_cut_steps_line_is_a_problem() -> None:
    # Built: diffusion-pipe's `steps: 17` line cut in the middle of `iter time`.
    cut = STEPS_17[:30]
    assert cut == "steps: 17 loss: 0.5994 iter ti"
    assert DeepSpeedParser.matches(cut)
    found = DeepSpeedParser().feed(cut, 4)
    assert isinstance(found, Problem)
    assert found.line == 4
    assert "cut off" in found.message


def test_extra_losses() -> None:
    # Built: diffusion-pipe's `steps: 17` line with the `lm loss: ... moe loss: ...` pair the pipeline engine inserts
    # for a model reporting additional losses (pipe/engine.py `agg_additional_losses`).
    line = STEPS_17.replace("loss: 0.5994 ", "loss: 0.5994 lm loss: 0.5500 moe loss: 0.0494 ")
    point = DeepSpeedParser().feed(line, 1)
    assert point.loss == 0.5994
    assert point.losses == {"lm loss": 0.55, "moe loss": 0.0494, "samples_per_second": 0.316}


def test_the_log_time_zone() -> None:
    parser = DeepSpeedParser({"timezone": "Europe/Paris"})
    point = parser.feed(ENGINE_17, 1)
    assert point.at == datetime(2026, 7, 30, 9, 16, 29, 681_000, tzinfo=ZoneInfo("Europe/Paris"))
    assert parser.feed(STEPS_17, 2) is None  # the same step: it completes the point
    assert point.loss == 0.5994


def test_a_rank_prefix_is_removed() -> None:
    # Built: torchrun's `[default0]:` prefix on diffusion-pipe's `steps: 17` line.
    assert DeepSpeedParser.matches(clean_line("[default0]:" + STEPS_17))


@pytest.mark.parametrize(
    "line",
    [
        # DeepSpeed's own engine and timer lines: printed by Megatron-DeepSpeed and Trainer runs too.
        ENGINE_17,
        lines_of("deepspeed_chat_opt13b_sft.log")[12],
        # Megatron: tests/samples/training/deepspeed_megatron_llama_pp.log (an iteration line, start).
        " iteration        2/    2500 | consumed samples:           64 | consumed tokens:       131072 | elapsed "
        "time per iteration (ms): 1346.3 | learning rate: 1.500E-07 | global batch size:    32 | lm loss: 1.065210E+01",
        # NeMo: tests/samples/training/lightning_tqdm_stable_diffusion.log, line 1.
        lines_of("lightning_tqdm_stable_diffusion.log")[0],
        # torchtitan: tests/samples/training/torchtitan_llama3_8b_bf16_h100.log, line 2.
        lines_of("torchtitan_llama3_8b_bf16_h100.log")[1],
        # Hugging Face Trainer and Neuron samples.
        lines_of("hf_trainer_esm2_ddp_srun.log")[16],
        lines_of("neuron_nxd_llama3_70b_trn1_autoresume.log")[0],
        lines_of("neuron_bert_large_phase2_trn1.log")[-1],
    ],
)
def test_other_lines_do_not_match(line: str) -> None:
    assert not DeepSpeedParser.matches(clean_line(line))
