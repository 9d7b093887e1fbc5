"""The Hugging Face Trainer parser on real logs (tests/samples/training/, origins in SOURCES.md).

Every figure below is read by hand from the sample's own line, and the arithmetic is in the comment beside it.
Variants no public log shows (a cut line, a printed nan loss, a resume line, a tensor-valued norm) are built here from
a real line or from the Trainer's own format string, and each says so.
"""

from __future__ import annotations

import pytest

from tests.training.samples import by_iteration, lines_of, read
from workloads.training.logs import FORMATS, parse_log
from workloads.training.logs.base import Point, Problem, clean_line
from workloads.training.logs.hf_trainer import HFTrainerParser

# The ESM-2 run's second dict, verbatim with its srun label (awsome-distributed-training's ESM-2 README): the base of
# the built variants below.
ESM2_32 = lines_of("hf_trainer_esm2_ddp_srun.log")[18]
# The Qwen2.5-VL run's two dicts and its bars, verbatim (LaVi-Lab/VG-LLM#21).
VGLLM = read("hf_trainer_qwen25vl_nan_grad_norm.log")


def test_registered_under_its_name() -> None:
    assert FORMATS["hf_trainer"] is HFTrainerParser
    assert HFTrainerParser.label == "Hugging Face Transformers Trainer"


# --- transformers 4.x, the header read ---------------------------------------------------------------------------


def test_esm2_steps_from_the_epoch_and_the_header() -> None:
    parsed = parse_log(read("hf_trainer_esm2_ddp_srun.log"))
    assert parsed.format == "hf_trainer"
    assert parsed.problems == []
    # The header, printed by both ranks: `Num examples = 100,000`, `Num Epochs = 1`, `Total train batch size (w.
    # parallel, distributed & accumulation) = 1,024`, `Total optimization steps = 97`.
    assert parsed.settings == {"num_examples": 100_000, "num_epochs": 1, "global_batch_size": 1024, "max_steps": 97}
    # Steps per epoch = 97 / 1 = 97 (100,000 / 1,024 = 97.7 agrees within 2 %). The epochs printed are 0.16, 0.33,
    # 0.49, 0.66, 0.82: 0.16 × 97 = 15.5 → 16, 0.33 × 97 = 32.0 → 32, 0.49 × 97 = 47.5 → 48, 0.66 × 97 = 64.0 → 64,
    # 0.82 × 97 = 79.5 → 80 (a logging interval of 16).
    assert [p.iteration for p in parsed.points] == [16, 32, 48, 64, 80]
    # 26 lines: 5 dicts, 16 header lines, 4 bars and one bar cut by the README.
    assert parsed.other_lines == 26 - 5
    point = by_iteration(parsed.points)[32]
    # `0: {'loss': 2.8209, 'grad_norm': 2.9741921424865723, 'learning_rate': 3.3505154639175256e-05, 'epoch': 0.33}`
    assert point.loss == 2.8209
    assert point.grad_norm == 2.9741921424865723
    assert point.learning_rate == 3.3505154639175256e-05
    assert point.iterations_in_interval == 32 - 16
    # The bar before it, ` 19%|█▊        | 18/97 [01:50<08:31,  6.39s/it]`, gives the step time, not the step: the dict
    # of step 32 comes after a bar at 18, which stdout's buffering left behind.
    assert point.step_seconds == 6.39
    first = parsed.points[0]
    assert first.step_seconds is None  # no bar before the first dict
    assert first.iterations_in_interval == 1  # the interval before the first point is not known
    assert first.tokens is None and first.at is None and first.nan_iterations == 0


def test_the_evaluation_header_is_not_the_training_one() -> None:
    # Built: trainer.py's evaluation_loop header (`***** Running Evaluation *****`, `  Num examples = ...`,
    # `  Batch size = ...`) in the ESM-2 header's prefix, before the dicts.
    prefix = "0: [INFO|trainer.py:3819] 2024-07-17 00:20:20,685 >> "
    evaluation = "".join(prefix + text + "\n" for text in ("***** Running Evaluation *****", "  Num examples = 1,000"))
    lines = read("hf_trainer_esm2_ddp_srun.log").splitlines(keepends=True)
    parsed = parse_log("".join(lines[:16]) + evaluation + "".join(lines[16:]))
    assert parsed.settings["num_examples"] == 100_000
    assert [p.iteration for p in parsed.points] == [16, 32, 48, 64, 80]


def test_a_later_chunk_with_the_header_given_back() -> None:
    # The reporter posts a log in chunks; the header is in the first one only. Given back as options (what the first
    # chunk's settings say), the third dict onwards keeps its step.
    first = parse_log("\n".join(lines_of("hf_trainer_esm2_ddp_srun.log")[:20]))
    later = parse_log("\n".join(lines_of("hf_trainer_esm2_ddp_srun.log")[20:]), options=first.settings)
    assert [p.iteration for p in first.points] == [16, 32]
    assert [p.iteration for p in later.points] == [48, 64, 80]


def test_steps_per_epoch_given_by_the_poster_wins() -> None:
    # 0.16 × 100 = 16, 0.33 × 100 = 33, ...: the poster's figure is used as given.
    parsed = parse_log(read("hf_trainer_esm2_ddp_srun.log"), options={"steps_per_epoch": 100})
    assert [p.iteration for p in parsed.points] == [16, 33, 49, 66, 82]


# --- transformers 4.x, `'grad_norm': nan`, no header -------------------------------------------------------------


def test_nan_grad_norm_is_none_and_the_dicts_are_counted() -> None:
    parsed = parse_log(VGLLM)
    assert parsed.format == "hf_trainer"
    assert parsed.problems == []
    assert parsed.settings == {}
    # No header, no logging_steps: the iteration counts the dicts.
    assert [p.iteration for p in parsed.points] == [1, 2]
    first, second = parsed.points
    # `{'loss': 1.7018, 'grad_norm': nan, 'learning_rate': 1.3513513513513515e-06, 'epoch': 0.01}`
    assert first.loss == 1.7018
    assert first.grad_norm is None
    assert first.learning_rate == 1.3513513513513515e-06
    assert first.nan_iterations == 0  # the loss is not nan
    assert first.step_seconds is None
    # `{'loss': 1.1469, 'grad_norm': nan, 'learning_rate': 2.702702702702703e-06, 'epoch': 0.02}`, after the bar
    # `  2%|▏         | 20/1233 [14:40<13:43:48, 40.75s/it]`.
    assert second.loss == 1.1469
    assert second.grad_norm is None
    assert second.step_seconds == 40.75
    # 23 lines, of which 2 dicts.
    assert parsed.other_lines == 23 - 2


def test_logging_steps_from_the_poster() -> None:
    parsed = parse_log(VGLLM, options={"logging_steps": 10})
    # The bars show the dicts at steps 10 and 20 (`10/1233` before the first one's redraw, `20/1233` before the second).
    assert [p.iteration for p in parsed.points] == [10, 20]
    assert [p.iterations_in_interval for p in parsed.points] == [10, 10]


def test_logging_steps_printed_in_the_log() -> None:
    # Built: Transformers' `TrainingArguments(...)` repr, as scripts print it, with the run's interval of 10.
    text = "TrainingArguments(\n_n_gpu=1,\nlogging_steps=10,\nlogging_strategy=steps,\n)\n" + VGLLM
    parsed = parse_log(text)
    assert parsed.settings["logging_steps"] == 10
    assert [p.iteration for p in parsed.points] == [10, 20]


def test_resume_line_sets_the_first_step() -> None:
    # Built: trainer.py's `logger.info(f"  Continuing training from global step {self.state.global_step}")` in the
    # `[INFO|trainer.py:...]` prefix of the ESM-2 header, before the VG-LLM dicts (logging every 10 steps).
    resumed = "[INFO|trainer.py:2147] 2024-07-17 00:18:20,685 >>   Continuing training from global step 500\n"
    parsed = parse_log(resumed + VGLLM, options={"logging_steps": 10})
    # The first log after a checkpoint at 500 is at 510, then 520.
    assert [p.iteration for p in parsed.points] == [510, 520]


# --- transformers 5.x: values printed as strings, two runs in one file -------------------------------------------


def test_v5_string_values_summary_and_a_second_run() -> None:
    parsed = parse_log(read("hf_trainer_v5_trl_sft_qwen35_colab.log"))
    assert parsed.format == "hf_trainer"
    assert parsed.problems == []
    # Two runs of 30 steps, six dicts each (every 5 steps, not printed in this excerpt): the second run's epoch goes
    # back from '2' to '0.3556', a restart. With the dicts counted, steps per epoch as seen = 6 / 2 = 3, and
    # 0.3556 × 3 = 1.07 → 1: the numbering starts again at 1.
    assert [p.iteration for p in parsed.points] == [1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6]
    first = parsed.points[0]
    # `{'loss': '2.163', 'grad_norm': '5.765', 'learning_rate': '9.966e-05', 'entropy': '1.177', 'num_tokens': '7479',
    #  'mean_token_accuracy': '0.6559', 'epoch': '0.3556'}` after ` 17%|█▋        | 5/30 [00:50<04:02,  9.69s/it]`
    assert first.loss == 2.163
    assert first.grad_norm == 5.765
    assert first.learning_rate == 9.966e-05
    assert first.tokens == 7479
    assert first.step_seconds == 9.69
    # `'num_tokens': '1.49e+04'`: 5.x prints 4 significant digits, read as printed.
    assert parsed.points[1].tokens == 14_900
    # The first run's last dict, `'grad_norm': 'nan'`; the second run's first, `'grad_norm': 'nan'` too.
    assert parsed.points[5].grad_norm is None
    assert parsed.points[5].loss == 0.02572
    assert parsed.points[6].grad_norm is None
    assert parsed.points[6].learning_rate == 9.966e-06
    assert parsed.points[6].step_seconds == 14.13  # ` 17%|█▋        | 5/30 [01:10<05:53, 14.13s/it]`
    assert [p.grad_norm is None for p in parsed.points[6:]] == [True, False, True, False, False, True]
    # Both runs print `{'train_runtime': ..., 'train_loss': ...}`; the summary is the last one's:
    # `{'train_runtime': '396.5', 'train_samples_per_second': '1.21', 'train_steps_per_second': '0.076',
    #   'train_loss': '1.57', 'epoch': '2'}`
    assert parsed.summary == {
        "train_runtime": 396.5,
        "train_samples_per_second": 1.21,
        "train_steps_per_second": 0.076,
        "train_loss": 1.57,
        "epoch": 2.0,
    }


def test_v5_restart_with_the_logging_interval() -> None:
    parsed = parse_log(read("hf_trainer_v5_trl_sft_qwen35_colab.log"), options={"logging_steps": 5})
    # Steps per epoch as seen = 30 / 2 = 15; 0.3556 × 15 = 5.3 → 5: the second run starts again at step 5.
    assert [p.iteration for p in parsed.points] == [5, 10, 15, 20, 25, 30, 5, 10, 15, 20, 25, 30]


def test_summary_alone_is_not_a_point() -> None:
    summary = next(line for line in lines_of("hf_trainer_v5_trl_sft_qwen35_colab.log") if "train_runtime" in line)
    parser = HFTrainerParser()
    assert parser.feed(summary, 1) is None
    assert parser.summary["train_loss"] == 0.5373
    assert not HFTrainerParser.matches(summary)


# --- variants built from real lines ------------------------------------------------------------------------------


def test_a_cut_dict_is_a_problem() -> None:
    # Built: the ESM-2 dict of step 32 cut in the middle of its gradient norm.
    cut = clean_line(ESM2_32)[:38]
    assert cut == "{'loss': 2.8209, 'grad_norm': 2.974192"
    assert HFTrainerParser.matches(cut)
    found = HFTrainerParser().feed(cut, 7)
    assert isinstance(found, Problem)
    assert found.line == 7
    assert "cut off" in found.message


def test_an_unreadable_loss_is_a_problem() -> None:
    # Built: the same dict with its loss value gone.
    found = HFTrainerParser().feed(clean_line(ESM2_32).replace("2.8209", ""), 3)
    assert isinstance(found, Problem)
    assert found.line == 3


def test_a_nan_loss_is_none_and_counted() -> None:
    # Built: the ESM-2 dict with `nan` for its loss, as 4.x prints a float nan.
    point = HFTrainerParser().feed(clean_line(ESM2_32).replace("2.8209", "nan"), 1)
    assert isinstance(point, Point)
    assert point.loss is None
    assert point.nan_iterations == 1
    assert point.grad_norm == 2.9741921424865723


def test_a_tensor_grad_norm() -> None:
    # Built: LLaVA-NeXT's DPO trainer prints `'grad_norm': tensor(nan, device='cuda:0', dtype=torch.float64)`
    # (LLaVA-VL/LLaVA-NeXT#359); here in the ESM-2 dict, then with a finite value.
    nan_line = clean_line(ESM2_32).replace("2.9741921424865723", "tensor(nan, device='cuda:0', dtype=torch.float64)")
    point = HFTrainerParser().feed(nan_line, 1)
    assert point.grad_norm is None
    assert point.learning_rate == 3.3505154639175256e-05
    finite = nan_line.replace("tensor(nan,", "tensor(1.25,")
    assert HFTrainerParser().feed(finite, 1).grad_norm == 1.25


def test_a_printed_step_is_the_iteration() -> None:
    # Real: ms-swift's dict of step 5 (modelscope/ms-swift#2280), with `'grad_norm': nan`.
    line = (
        "{'loss': 663.56591797, 'acc': 0.14326748, 'grad_norm': nan, 'learning_rate': 3.84e-06, 'memory(GiB)': 73.64, "
        "'train_speed(iter/s)': 0.010765, 'epoch': 0.0, 'global_step/max_steps': '5/2169', 'percentage': '0.23%', "
        "'elapsed_time': '6m 58s', 'remaining_time': '2d 2h 15m 22s'}"
    )
    point = HFTrainerParser().feed(line, 1)
    assert point.iteration == 5
    assert point.loss == 663.56591797
    assert point.grad_norm is None
    # Built: the same with the Trainer's `step` key, as some subclasses print it.
    assert HFTrainerParser().feed(clean_line(ESM2_32).replace("'epoch'", "'step': 32, 'epoch'"), 1).iteration == 32


def test_an_evaluation_dict_is_not_a_point() -> None:
    # Built: trainer.py's `evaluate` keys (`eval_loss`, `speed_metrics("eval", ...)`, epoch), as 4.x prints them.
    line = "{'eval_loss': 2.578, 'eval_runtime': 1.216, 'eval_samples_per_second': 13.98, 'epoch': 0.33}"
    parser = HFTrainerParser()
    assert not HFTrainerParser.matches(line)
    assert parser.feed(line, 1) is None
    assert parser.summary == {}


def test_tokens_seen_and_the_session_rate() -> None:
    # Built: the ESM-2 dict with the keys `include_num_input_tokens_seen` adds (trainer.py `log`).
    line = clean_line(ESM2_32).replace(
        "'epoch': 0.33}",
        "'epoch': 0.33, 'num_input_tokens_seen': 33554432, 'train_runtime': 219.1, "
        "'train_tokens_per_second': 153146.7}",
    )
    parser = HFTrainerParser()
    point = parser.feed(line, 1)
    assert point.tokens == 33_554_432
    assert point.tokens_per_second == 153146.7
    assert parser.summary == {}  # a training dict with `train_runtime` is still a training dict


@pytest.mark.parametrize(
    "line",
    [
        # Megatron: tests/samples/training/deepspeed_megatron_llama_pp.log (an iteration line, start).
        " iteration        2/    2500 | consumed samples:           64 | consumed tokens:       131072 | elapsed "
        "time per iteration (ms): 1346.3 | learning rate: 1.500E-07 | global batch size:    32 | lm loss: 1.065210E+01",
        # NeMo: tests/samples/training/lightning_tqdm_stable_diffusion.log, line 1.
        lines_of("lightning_tqdm_stable_diffusion.log")[0],
        # torchtitan: tests/samples/training/torchtitan_llama3_8b_bf16_h100.log, line 2.
        lines_of("torchtitan_llama3_8b_bf16_h100.log")[1],
        # DeepSpeed: tests/samples/training/deepspeed_steps_nan.log, lines 1 and 2.
        "steps: 16 loss: 0.7332 iter time (s): 3.181 samples/sec: 0.314",
        "[2026-07-30 09:16:29,681] [INFO] [logging.py:123:log_dist] [Rank 0] step=17, skipped=0, lr=[1e-06], mom=[0.0]",
        # Neuron: tests/samples/training/neuron_bert_large_phase2_trn1.log and neuron_nxdt_llama3_8b_dpo.log.
        lines_of("neuron_bert_large_phase2_trn1.log")[-1],
        lines_of("neuron_nxdt_llama3_8b_dpo.log")[0],
        # The Trainer's own lines that are not training dicts.
        "0: [INFO|trainer.py:2136] 2024-07-17 00:18:20,620 >>   Total optimization steps = 97",
        " 19%|█▊        | 18/97 [01:50<08:31,  6.39s/it]",
        "precision fix: {'precision': 'fp16', 'recast': 0, 'trainable_tensors': 496}",
    ],
)
def test_other_lines_do_not_match(line: str) -> None:
    assert not HFTrainerParser.matches(clean_line(line))
