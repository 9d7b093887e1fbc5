# ruff: noqa: E501 - msgids are kept whole, one per line, so a diff shows which text changed
"""The msgids of text that lives as data, not as literals in gettext calls: the Xid catalog (xid_catalog.csv), the
rule tables of workloads.health.dcgm and .incidents, the actions, and the prose of the reporter's install guide (the
script's docstring). Listed here so `make makemessages` extracts them and never marks their Japanese obsolete;
tests/health/test_xid_catalog.py names any that is missing here or has no Japanese."""

from django.utils.translation import gettext_noop

MSGIDS = (
    gettext_noop("double-bit ECC error"),
    gettext_noop(
        "An uncorrectable memory error reached the application. Reset the GPU (or reboot) to clear it; replace the node if it comes back."
    ),
    gettext_noop("row remapping recorded"),
    gettext_noop(
        "A memory row was marked for remapping. NVIDIA's catalog asks for no immediate action; the remap takes effect at the next GPU reset, so reset the GPU when the job allows."
    ),
    gettext_noop("row remapping failed"),
    gettext_noop(
        "The GPU could not remap a failing memory row: its memory can no longer be trusted. NVIDIA resets and then contacts support; on EC2 the node is replaced."
    ),
    gettext_noop("NVLink error"),
    gettext_noop(
        "A link between GPUs failed. Reboot the node (which resets every GPU of the NVLink domain); replace it if the error comes back."
    ),
    gettext_noop("GPU has fallen off the bus"),
    gettext_noop(
        "The driver lost the GPU on PCIe; a reset cannot reach it. NVIDIA reboots the node; on EC2 the node is replaced."
    ),
    gettext_noop("high single-bit ECC error rate"),
    gettext_noop("Corrected errors, no harm done yet; watch for double-bit errors or row-remap failures."),
    gettext_noop("contained ECC error"),
    gettext_noop(
        "An uncorrectable error was contained to one application, which must be restarted. Reset the GPU when convenient so the row remapping takes effect."
    ),
    gettext_noop("uncontained ECC error"),
    gettext_noop(
        "An uncorrectable error may have reached other applications: the GPU must be reset before any of them restarts. Replace the node if it comes back."
    ),
    gettext_noop("GSP RPC timeout"),
    gettext_noop(
        "The GPU System Processor (the firmware that runs the driver's core on H100/H200) stopped answering. The GPU is wedged until it is reset; a driver update may be due if it recurs."
    ),
    gettext_noop("GSP error"),
    gettext_noop(
        "The GPU System Processor's firmware hit an error. Reset the GPU; a driver update may be due if it recurs."
    ),
    gettext_noop("unrecovered ECC error"),
    gettext_noop(
        "An uncorrectable memory error the GPU could not contain or remap. Reset the GPU; replace the node if it comes back."
    ),
    gettext_noop("GPU initialization failure"),
    gettext_noop(
        "The GPU failed to initialize: it is not usable until it is reset; replace the node if the reset does not help."
    ),
    gettext_noop("NVLink SAW error"),
    gettext_noop(
        "An NVLink5 unit error: NVIDIA's catalog lists it for B100 and GB200, not for A100 or H100 (P5 and P5en do not raise it). NVIDIA resolves it by the unit and error status in the driver's message: a fatal one needs a GPU reset, a non-fatal one nothing. The exporter's err_msg decides (Fatal: critical; Nonfatal: a warning); without it, a warning to read the message."
    ),
    gettext_noop("NVLink RLW error"),
    gettext_noop("NVLink TLW error"),
    gettext_noop("NVLink TREX error"),
    gettext_noop("NVLink NVLPW control error"),
    gettext_noop("NVLink NETIR error"),
    gettext_noop("NVLink MSE error"),
    gettext_noop("GPU recovery action changed"),
    gettext_noop(
        "The driver says what the GPU needs: its message reads None, Drain P2P, Drain and Reset, GPU Reset Required or Node Reboot Required. The exporter's err_msg gives it when present; without it the portal asks for a reboot, which covers a reset too."
    ),
    gettext_noop("other Xid"),
    gettext_noop(
        "Most other Xids come from the application or the driver (13, 31, 43, 45...). Restart the job; open a case if the same Xid keeps coming back."
    ),
    gettext_noop("above 0"),
    gettext_noop(
        "Uncorrectable memory errors on a running GPU. Reset the GPU or reboot; replace the node if they come back."
    ),
    gettext_noop("History, possibly long fixed by row remapping: worth watching, not acting on."),
    gettext_noop("The spare rows did their job; a failed remap is what needs action."),
    gettext_noop("The GPU has no way left to retire failing memory: its memory can no longer be trusted."),
    gettext_noop("Work continues meanwhile; reset the GPU when the job allows."),
    # xgettext:no-python-format
    gettext_noop("throttled by heat for 1% of the window or more"),
    gettext_noop(
        "A healthy P5 does not throttle for heat, and cooling is the host's: a GPU that keeps doing it needs a new node."
    ),
    # xgettext:no-python-format
    gettext_noop("capped by power for 50% of the window or more"),
    gettext_noop(
        "Brief capping is GPU Boost at work under load; capped most of the time, a GPU slows the whole job: compare it with the node's other GPUs."
    ),
    gettext_noop("fewer GPUs reporting than the instance has"),
    gettext_noop("A GPU that stops reporting has usually fallen off the bus (Xid 79)."),
    # workloads.health.temperature.TEMPERATURE_RULES
    gettext_noop("at or above the GPU's slowdown temperature (DCGM_FI_DEV_SLOWDOWN_TEMP; H100 default 89 °C)"),
    gettext_noop(
        "The GPU runs at reduced clocks and the whole job waits for it; on EC2 the cooling is the host's: a GPU that stays this hot needs a new node."
    ),
    gettext_noop("within 1 °C of the GPU's shutdown temperature (DCGM_FI_DEV_SHUTDOWN_TEMP; H100 default 92 °C)"),
    gettext_noop("The GPU is about to power off and fail the node's jobs: move the work and replace the node."),
    gettext_noop(
        "at or above the memory's maximum operating temperature (DCGM_FI_DEV_MEM_MAX_OP_TEMP; H100 default 95 °C)"
    ),
    gettext_noop("Above it the memory slows down (DCGM's field reference): memory-bound work slows with it."),
    gettext_noop("A GPU near its shutdown temperature: it powers off and fails the jobs."),
    gettext_noop("GPU fallen off the bus: the node's jobs fail until it is replaced."),
    gettext_noop("Uncontained ECC error: other jobs on the node may have bad data."),
    gettext_noop("Row remap failed: the GPU's memory can no longer be trusted."),
    gettext_noop("NVLink error: collectives on the node fail or slow down."),
    gettext_noop("Double-bit ECC error: the running job was hit."),
    gettext_noop("Other critical Xids (94, 119, 120, 140, 143, 154, a fatal 144-150): reset or reboot soon."),
    gettext_noop("Row remap failed: replace the node."),
    gettext_noop("Uncorrectable memory errors on a running GPU."),
    gettext_noop("A GPU stopped reporting: usually fallen off the bus."),
    gettext_noop("The cloud reports the node failed."),
    gettext_noop("The cloud lost the node."),
    gettext_noop("Interconnect under its baseline: jobs run, slower than they should."),
    gettext_noop("Any other critical event."),
    gettext_noop("monitor"),
    gettext_noop("restart job"),
    gettext_noop("reset GPU"),
    gettext_noop("reboot node"),
    gettext_noop("replace node"),
    gettext_noop(
        "1. The script, a user to run it as, and its settings (cron, systemd and the script read this file).\n   Leave out FMP_DCGM_PORT if the nodes run no dcgm-exporter. The user must be allowed to run\n   `sacct -a`: any user is, unless slurm.conf sets PrivateData=jobs (then run it as root)."
    ),
    gettext_noop("2. The token shown on the cluster's page: run this, paste the token, press Enter, then Ctrl-D."),
    gettext_noop("3. Try it, sending nothing, then for real:"),
    gettext_noop("4. EITHER cron, every 5 minutes (output to syslog, tag fmp-reporter):"),
    gettext_noop("   OR a systemd timer (logs: journalctl -u fmp-reporter):"),
    gettext_noop(
        "FMP_INTERVAL (--interval) must match the schedule, in seconds (every 5 minutes: 300): the portal\nmarks the reporter silent after 3 intervals without a report."
    ),
    gettext_noop("5. After an nccl-tests run, post its log (`-` reads standard input):"),
    gettext_noop(
        "Settings come from the command line, else FMP_* environment variables, else /etc/fmp-reporter/env\n(another file: FMP_ENV_FILE). Exit status: 0 all sent; 1 refused by the portal (its message is\nprinted); 2 the portal unreachable after retries, or a local problem (no sacct, unreadable token)."
    ),
    # fmp_progress.py's guide (the training-log follower beside the reporter)
    gettext_noop("1. The script, beside fmp_reporter.py, and a folder where it keeps how far it read each log:"),
    gettext_noop(
        "2. The workload (its id on the portal) and the logs to follow, in /etc/fmp-reporter/env: a job\n   name follows every job of that name that squeue lists (a restarted job is a new job id), a job\n   id that job's StdOut, and FMP_PROGRESS_LOGS paths or globs (separated by spaces)."
    ),
    gettext_noop("3. Try it, sending nothing, then for real, then every 5 minutes with cron:"),
    gettext_noop(
        "Only complete lines are sent, up to 8 MB a post. How far each log was read is kept in\n/var/lib/fmp-reporter (FMP_STATE_DIR), so a run sends only what is new; the portal also knows how\nfar it read each log, so a state lost with a replaced node sends nothing twice. A new phase of\ntraining (continued pre-training, SFT) is a new run: --run NAME (FMP_PROGRESS_RUN), default main.\nExit status: 0 sent (or nothing new); 1 refused by the portal; 2 unreachable, or nothing to follow."
    ),
)
