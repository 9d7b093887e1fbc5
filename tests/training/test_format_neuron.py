"""The AWS Neuron parser on real logs (tests/samples/training/, origins in SOURCES.md).

Every figure below is read by hand from the sample's own line, and the arithmetic is in the comment beside it.
Variants no public log shows (a cut line, a printed nan, a newer release's extra fields) are built here from a real
line, and each says so. The PyTorch Lightning example's `loss is` line was found in no public log: its test line is
built from the example's print statement, and says so.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from tests.training.samples import by_iteration, lines_of, read
from workloads.training.logs import FORMATS, parse_log
from workloads.training.logs.base import Problem, clean_line
from workloads.training.logs.neuron import NeuronParser

# Verbatim lines, the bases of the built variants below.
TP_PP_6 = lines_of("neuron_nxd_llama3_70b_trn1_autoresume.log")[16]  # the Llama 3 70B run's step 6
BERT_26 = lines_of("neuron_bert_large_phase2_trn1.log")[42]  # BERT-large phase 2's step 26
DPO_1 = lines_of("neuron_nxdt_llama3_8b_dpo.log")[0]  # the DPO run's first bar


def test_registered_under_its_name() -> None:
    assert FORMATS["neuron"] is NeuronParser
    assert NeuronParser.label == "AWS Neuron (neuronx-distributed, NxD Training, neuronx-nemo-megatron)"


# --- neuronx-distributed's tp_pp Llama script, with a HyperPod auto-resume -----------------------------------------


def test_llama3_70b_steps_and_the_resume() -> None:
    parsed = parse_log(read("neuron_nxd_llama3_70b_trn1_autoresume.log"))
    assert parsed.format == "neuron"
    assert parsed.problems == []
    # Steps 1-5, the node replacement, then steps 6-9 from the checkpoint of step 5 (`--checkpoint_freq 5`): the
    # numbering goes on, nothing is computed again.
    assert [p.iteration for p in parsed.points] == list(range(1, 10))
    assert parsed.other_lines == 21 - 9
    point = by_iteration(parsed.points)[6]
    # `step 6 step_time 458.5973925590515s throughput 2.114068580652976 seq/s loss 1.6739352685399354 grad norm 10.125`
    assert point.step_seconds == 458.5973925590515
    assert point.loss == 1.6739352685399354
    assert point.grad_norm == 10.125
    assert point.losses == {"sequences_per_second": 2.114068580652976}
    assert point.tokens_per_second is None  # the sequence length is on the command line, not in the log
    assert point.learning_rate is None and point.at is None


def test_tokens_per_second_with_the_sequence_length() -> None:
    # The README's command line: `--seq_len 8192`.
    parsed = parse_log(read("neuron_nxd_llama3_70b_trn1_autoresume.log"), options={"seq_length": 8192})
    # 2.114068580652976 sequences/s × 8192 tokens = 17318.45 tokens/s
    assert by_iteration(parsed.points)[6].tokens_per_second == pytest.approx(2.114068580652976 * 8192)
    # Built: the same flag as the README's `ps` line shows it, read from the log.
    parsed = parse_log("python -u run_llama_nxd.py --seq_len 8192 --pipeline_parallel_size 8\n" + TP_PP_6)
    assert parsed.settings == {"seq_length": 8192}
    assert parsed.points[0].tokens_per_second == pytest.approx(2.114068580652976 * 8192)


def test_newer_step_loss_wording_and_a_missing_norm() -> None:
    # Built: step 6 as the current logger.py prints it (`step loss`), with `grad norm None` (no norm computed).
    line = TP_PP_6.replace(" loss ", " step loss ").replace("grad norm 10.125", "grad norm None")
    point = NeuronParser().feed(line, 1)
    assert point.loss == 1.6739352685399354
    assert point.grad_norm is None


def test_a_nan_loss_is_none_and_counted() -> None:
    # Built: step 6 with a nan loss.
    point = NeuronParser().feed(TP_PP_6.replace("loss 1.6739352685399354", "loss nan"), 1)
    assert point.loss is None
    assert point.nan_iterations == 1
    assert point.grad_norm == 10.125


def test_a_cut_step_line_is_a_problem() -> None:
    # Built: step 6 cut before its gradient norm.
    cut = TP_PP_6[:73]
    assert cut == "step 6 step_time 458.5973925590515s throughput 2.114068580652976 seq/s lo"
    assert NeuronParser.matches(cut)
    found = NeuronParser().feed(cut, 9)
    assert isinstance(found, Problem)
    assert found.line == 9
    assert "cut off" in found.message


# --- the BERT pretraining tutorial's LOG lines ---------------------------------------------------------------------


def test_bert_phase2_log_lines_and_the_namespace() -> None:
    parsed = parse_log(read("neuron_bert_large_phase2_trn1.log"))
    assert parsed.format == "neuron"
    assert parsed.problems == []
    assert [p.iteration for p in parsed.points] == list(range(26, 33))
    assert parsed.other_lines == 49 - 7
    # The printed Namespace: `seed=12349, seq_len=512, shards_per_ckpt=1, ...`.
    assert parsed.settings == {"seq_length": 512}
    point = parsed.points[0]
    # `LOG Tue Sep 27 20:56:35 2022 - (0, 26) step_loss : 4.3438  learning_rate : 6.66e-06  throughput : 494.55`
    assert point.at == datetime(2022, 9, 27, 20, 56, 35, tzinfo=UTC)
    assert point.loss == 4.3438
    assert point.learning_rate == 6.66e-06
    assert point.losses == {"sequences_per_second": 494.55}
    # 494.55 sequences/s × 512 tokens = 253209.6 tokens/s
    assert point.tokens_per_second == pytest.approx(253209.6)
    assert point.grad_norm is None
    # `(0, 32) step_loss : 4.4688 ... throughput : 496.02`
    assert parsed.points[-1].loss == 4.4688
    assert parsed.points[-1].at == datetime(2022, 9, 27, 21, 3, 10, tzinfo=UTC)


def test_log_line_time_zone() -> None:
    point = NeuronParser({"timezone": "America/Los_Angeles"}).feed(BERT_26, 1)
    assert point.at == datetime(2022, 9, 27, 20, 56, 35, tzinfo=ZoneInfo("America/Los_Angeles"))


def test_log_line_of_a_newer_release() -> None:
    # Built: step 26 as logger.py prints it now (` seq/s` after the throughput, then `grad-norm : ...`).
    point = NeuronParser().feed(BERT_26 + " seq/s grad-norm : 1.4375", 1)
    assert point.losses == {"sequences_per_second": 494.55}
    assert point.grad_norm == 1.4375


def test_a_cut_log_line_is_a_problem() -> None:
    # Built: step 26 cut before its throughput.
    cut = BERT_26[:70]
    assert NeuronParser.matches(cut)
    assert isinstance(NeuronParser().feed(cut, 2), Problem)


# --- NxD Training's Lightning progress bar -----------------------------------------------------------------------


def test_nxdt_dpo_bar_and_its_redraw() -> None:
    parsed = parse_log(read("neuron_nxdt_llama3_8b_dpo.log"))
    assert parsed.format == "neuron"
    assert parsed.problems == []
    # Three bar lines: global_step=1.000, then 3.000 twice (the bar redrawn at the next batch).
    assert [p.iteration for p in parsed.points] == [1, 3]
    assert parsed.other_lines == 1
    first = parsed.points[0]
    # `reduced_train_loss=6.930, chosen_rewards=-0.81, rejected_rewards=-0.675, lr=2.73e-5, parameter_norm=1.95e+3,
    #  global_step=1.000, consumed_samples=32.00, throughput=0.108, throughput_peak=0.0677, gradient_norm=8.600`
    assert first.loss == 6.93
    assert first.learning_rate == 2.73e-5
    assert first.grad_norm == 8.6
    assert first.consumed_samples == 32
    assert first.losses == {"sequences_per_second": 0.108}
    assert parsed.points[1].consumed_samples == 64
    assert parsed.points[1].loss == 6.79


def test_step_time_from_the_global_batch() -> None:
    # consumed_samples=32.00 after global_step=1.000 (two steps done): 16 sequences a step; 16 / 0.108 = 148.1 s.
    parsed = parse_log(read("neuron_nxdt_llama3_8b_dpo.log"), options={"global_batch_size": 16})
    assert parsed.points[0].step_seconds == pytest.approx(16 / 0.108)
    # Built: NxD Training's printed config (`global_batch_size: 16`, `seq_length: 4096`) before the bars.
    parsed = parse_log("  global_batch_size: 16\n  seq_length: 4096\n" + read("neuron_nxdt_llama3_8b_dpo.log"))
    assert parsed.settings == {"global_batch_size": 16, "seq_length": 4096}
    # 0.108 sequences/s × 4096 = 442.368 tokens/s
    assert parsed.points[0].tokens_per_second == pytest.approx(442.368)
    assert parsed.points[0].step_seconds == pytest.approx(16 / 0.108)


def test_nxdt_pretraining_bar_without_throughput() -> None:
    parsed = parse_log(read("neuron_nxdt_llama3_70b_pretraining.log"))
    assert parsed.format == "neuron"  # `parameter_norm=` is NxD Training's, not NeMo's
    # global_step=1.000, 2.000, 2.000 (a redraw), 3.000
    assert [p.iteration for p in parsed.points] == [1, 2, 3]
    # consumed_samples=2048.0, 3072.0, 4096.0; reduced_train_loss=13.40 on every line; lr=7.5e-9
    assert [p.consumed_samples for p in parsed.points] == [2048, 3072, 4096]
    assert [p.loss for p in parsed.points] == [13.4, 13.4, 13.4]
    assert parsed.points[0].learning_rate == 7.5e-9
    assert parsed.points[0].grad_norm is None
    assert parsed.points[0].tokens_per_second is None


def test_a_bar_cut_before_its_step_is_a_problem() -> None:
    # Built: the DPO run's first bar cut before `global_step=`.
    cut = DPO_1[: DPO_1.index("global_step")]
    assert NeuronParser.matches(cut)
    found = NeuronParser().feed(cut, 5)
    assert isinstance(found, Problem)
    assert found.line == 5


def test_a_bar_with_only_reduced_train_loss_is_read_when_named() -> None:
    # Built: the 70B bar without `parameter_norm=` (as NxD Training's SFT tutorials show it): NeMo's line exactly.
    line = lines_of("neuron_nxdt_llama3_70b_pretraining.log")[0].replace(" parameter_norm=5536.0,", "")
    assert not NeuronParser.matches(line)
    point = NeuronParser().feed(line, 1)
    assert point.iteration == 1
    assert point.consumed_samples == 2048


# --- neuronx-distributed's PyTorch Lightning example -------------------------------------------------------------


def test_lightning_example_line() -> None:
    # Built, not seen in any public log: module_llama.py's print,
    # f"step {self.global_step} loss is {loss}, lr is {self.lr}, throughput {self.tps} seq/s,  input_ids {...},
    #   norm {self.global_norm}, global rank {xr.global_ordinal()}", filled with step 6 of the 70B run.
    line = (
        "step 6 loss is 1.6739352685399354, lr is 1.5e-05, throughput 2.114068580652976 seq/s,  input_ids 2148318,"
        " norm tensor(10.1250, device='xla:0'), global rank 0"
    )
    assert NeuronParser.matches(line)
    point = NeuronParser().feed(line, 1)
    assert point.iteration == 6
    assert point.loss == 1.6739352685399354
    assert point.learning_rate == 1.5e-05
    assert point.grad_norm == 10.125
    assert point.losses == {"sequences_per_second": 2.114068580652976}


@pytest.mark.parametrize(
    "line",
    [
        # NeMo's own bar and printer: tests/samples/training/lightning_tqdm_stable_diffusion.log,
        # nemo2_evo2_7b_finetune.log.
        lines_of("lightning_tqdm_stable_diffusion.log")[0],
        next(line for line in lines_of("nemo2_evo2_7b_finetune.log") if "reduced_train_loss" in line),
        # Megatron: tests/samples/training/deepspeed_megatron_llama_pp.log (an iteration line, start).
        " iteration        2/    2500 | consumed samples:           64 | consumed tokens:       131072 | elapsed "
        "time per iteration (ms): 1346.3 | learning rate: 1.500E-07 | global batch size:    32 | lm loss: 1.065210E+01",
        # torchtitan: tests/samples/training/torchtitan_llama3_8b_bf16_h100.log, line 2.
        lines_of("torchtitan_llama3_8b_bf16_h100.log")[1],
        # DeepSpeed and the Hugging Face Trainer (optimum-neuron prints the Trainer's dicts).
        "steps: 16 loss: 0.7332 iter time (s): 3.181 samples/sec: 0.314",
        lines_of("hf_trainer_esm2_ddp_srun.log")[16],
        # The run's own other lines.
        "[Auto Resume] Info: JobID: 82 StepID: 0 Retrying step. Attempt number: 1",
        "Worker 21 resuming from checkpoint ./output/ckpt_28125.pt at step 28125",
    ],
)
def test_other_lines_do_not_match(line: str) -> None:
    assert not NeuronParser.matches(clean_line(line))
