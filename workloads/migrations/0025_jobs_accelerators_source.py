"""Where each job's accelerator count came from, and the cluster's exclusive partitions.

Rows reported before: a job whose AllocTRES named a GPU or Neuron gres kept its kind (alloc_tres); one with
accelerators but no kind was counted per node, whatever its partition (per_node, until its next report); the
rest held none."""

from django.db import migrations, models


def label_existing(apps, schema_editor):
    Job = apps.get_model("workloads", "Job")
    Job.objects.exclude(accelerator_kind="").update(accelerators_source="alloc_tres")
    Job.objects.filter(accelerator_kind="", accelerators__gt=0).update(accelerators_source="per_node")


class Migration(migrations.Migration):
    dependencies = [("workloads", "0024_neuron_trn1_baseline")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="accelerators_source",
            field=models.CharField(
                choices=[
                    ("alloc_tres", "AllocTRES names them"),
                    ("exclusive_node", "whole nodes: an exclusive partition, no gres"),
                    ("none", "none: no gres on a shared partition"),
                    ("per_node", "counted per node (reported before AllocTRES was read)"),
                ],
                default="none",
                max_length=16,
                verbose_name="accelerators from",
            ),
        ),
        migrations.AddField(
            model_name="cluster",
            name="slurm_exclusive_partitions",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="Partitions with OverSubscribe=EXCLUSIVE, from the reporter's scontrol show partition.",
                verbose_name="exclusive Slurm partitions",
            ),
        ),
        migrations.RunPython(label_existing, migrations.RunPython.noop),
    ]
