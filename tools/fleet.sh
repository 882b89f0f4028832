#!/bin/sh
# fleet.sh: kcs on many hosts through Slurm, and the levels of checking
# (docs/fleet.md says how to run it on a real cluster).
#
#   tools/fleet.sh level probe|quick|medium|full [--kcs PATH] [--results FILE]
#                        [--expected RECORD] [-- KCS_OPTIONS...]
#       check this node now at a level (a Slurm prolog or epilog, an
#       administrator's long run); exits as kcs run does: 0 passed, 1 a case
#       failed, errored or the run checked nothing, 2 usage. probe runs
#       `kcs probe` (compared with RECORD where given, else the node's
#       identical cards with each other), the others `kcs run`.
#   tools/fleet.sh submit [options] [-- KCS_OPTIONS...]
#       writes OUTPUT/fleet.sbatch, a job array of one task per node (or per
#       GPU), each running a level into OUTPUT/results-<array index>.json, and
#       submits it with a merge job that runs when every task has ended.
#   tools/fleet.sh task OUTPUT LEVEL KCS [-- KCS_OPTIONS...]
#       what one array task runs (fleet.sbatch calls it): the level, then the
#       digest of each results file it wrote (results-<index>.digest).
#   tools/fleet.sh merge OUTPUT [--history DIR] [KCS_FLEET_OPTIONS...]
#       the fleet report: report/kcs_fleet.py over OUTPUT's results files,
#       its summary kept in the history folder DIR (default OUTPUT/history)
#       and compared with the earlier ones there.
#
# Why a script over sbatch and not a `kcs fleet` command: the job is Slurm's
# (its options are sbatch's, passed through as written), the merge is
# Python's (report/kcs_fleet.py), and a level is a choice of cases and
# options of the existing runner; a C command would only assemble the same
# sbatch text and shell out to it.
set -eu
source=$(cd "$(dirname "$0")/.." && pwd)
python=${KCS_PYTHON:-/usr/bin/python3}
expected=${KCS_PROBE_RECORD:-} # the probe level's record (level --expected, or the environment for tasks)

usage() {
    sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
die() { echo "fleet.sh: $*" >&2; exit 2; }

# The levels, after NVIDIA DCGM's diagnostic levels (docs/fleet.md):
#   probe   `kcs probe`: one cycle of the probe's small deterministic kernels on
#           every card, each block's output hash compared with the record of
#           the cards' model (--expected), else with the node's identical cards
#           (the majority), else with each op's oracle. A second or less a GPU:
#           fit for every job's prolog.
#   quick   every op and dtype, every kernel row, at least one case each: per
#           op and dtype the case named in quick_cases below, else the
#           smallest case with at least 256 elements (sizes multiplied), else
#           the largest smaller one; no perf or large cases, each kernel run
#           once, untimed. Seconds: fit for a prolog.
#   medium  every case but those tagged large, untimed, each kernel run twice
#           and its two outputs compared bit for bit (--determinism).
#   full    every case, the perf cases timed against the device's measured
#           ceilings, --determinism: the suite.
# Cases named for quick where the smallest case would take a kernel through
# too little of itself (GEMM with alpha = 0 reads neither A nor B) or would
# miss a kernel row that takes only one mode (tf32, tensor, f32 outputs, FP8
# in cuBLASLt's layout).
quick_cases="gemm/f32-33x65x17 gemm/f64-33x65x17 gemm/f32-tf32-7x93x144 gemm/f16-nn-37x29x19
gemm/f16-nn-37x29x19-f32-out gemm/bf16-33x65x17 gemm/bf16-7x93x144-f32-out gemm/f16-tensor-nt-37x29x19-f32-out
gemm/bf16-tensor-7x93x144-f32-out gemm/fp8_e4m3-nt-48x32x64-f32-out"
quick_least_elements=256

# quick_selection KCS [OPTIONS...]: the case names of the quick level, from `kcs list`.
quick_selection() {
    kcs=$1
    shift
    listing=$("$kcs" list "$@") || die "'$kcs list' failed"
    printf '%s\n' "$listing" | awk -v least="$quick_least_elements" -v named="$quick_cases" '
        BEGIN { count = split(named, list, /[ \n]+/); for (i = 1; i <= count; i++) if (list[i] != "") wanted[list[i]] = 1 }
        /\[large\]|\[perf\]/ { next }
        {
            key = $2 " " $3
            if ($1 in wanted) { chosen[key] = chosen[key] " " $1; next }
            size = 1
            for (i = 4; i <= NF && $i != "expect"; i++) { split($i, pair, "="); size *= pair[2] }
            big = size >= least
            if (!(key in pick) || (big && (!picked_big[key] || size < picked_size[key])) ||
                (!big && !picked_big[key] && size > picked_size[key])) {
                pick[key] = $1; picked_size[key] = size; picked_big[key] = big
            }
        }
        END {
            # An op and dtype with named cases takes those instead of the smallest.
            for (key in pick) if (!(key in chosen)) print pick[key]
            for (key in chosen) { count = split(chosen[key], list, " "); for (i = 1; i <= count; i++) print list[i] }
        }' | sort
}

# level_command LEVEL KCS: the kcs run options of a level (before the caller's options).
level_options() {
    case $1 in
    quick) echo "--no-save --time-limit 60" ;;
    medium) echo "--no-save --skip-large --determinism --time-limit 300" ;;
    full) echo "--benchmark --determinism" ;;
    probe) echo "" ;; # kcs probe's own defaults: one cycle, every device of the backend
    *) die "no level '$1' (probe, quick, medium, full)" ;;
    esac
}

run_level() { # run_level LEVEL KCS RESULTS [KCS_OPTIONS...]
    level=$1 kcs=$2 results=$3
    shift 3
    if [ "$level" = probe ]; then
        # shellcheck disable=SC2086  # the record's option is one or no word pair
        exec "$kcs" probe --results "$results" ${expected:+--expected "$expected"} "$@"
    fi
    # Every level knows the compiler and driver bugs kcs has found (docs/canaries.md).
    options="$(level_options "$level") --expectations $source/expectations/known-bugs.txt"
    if [ "$level" = quick ]; then
        cases=$(quick_selection "$kcs" "$@" 2>/dev/null || quick_selection "$kcs")
        [ -n "$cases" ] || die "the quick level selected no case"
        # shellcheck disable=SC2086  # options and case names are single words
        exec "$kcs" run $options --results "$results" "$@" $cases
    fi
    # shellcheck disable=SC2086
    exec "$kcs" run $options --results "$results" "$@"
}

command=${1:-}
[ $# -gt 0 ] && shift
case $command in
level)
    [ $# -ge 1 ] || usage
    level=$1
    shift
    level_options "$level" > /dev/null
    kcs="$source/build/kcs" results=kcs-results.json
    while [ $# -gt 0 ]; do
        case $1 in
        --kcs) kcs=$2; shift 2 ;;
        --results) results=$2; shift 2 ;;
        --expected) expected=$2; shift 2 ;;
        --) shift; break ;;
        *) break ;;
        esac
    done
    run_level "$level" "$kcs" "$results" "$@"
    ;;
task)
    [ $# -ge 3 ] || usage
    output=$1 level=$2 kcs=$3
    shift 3
    [ "${1:-}" = -- ] && shift
    index=${SLURM_ARRAY_TASK_ID:-0}
    mkdir -p "$output"
    # What this node's build lists, so that the merge can name a kernel row that ran nothing.
    "$kcs" devices > "$output/devices-$index.txt" 2>&1 || true
    status=0
    (run_level "$level" "$kcs" "$output/results-$index.json" "$@") || status=$?
    # A further step of the site's (FLEET_EXTRA_STEP): it may write results-$index.<name>.json.
    if [ -n "${FLEET_EXTRA_STEP:-}" ]; then
        FLEET_OUTPUT=$output FLEET_TASK=$index sh -c "$FLEET_EXTRA_STEP" || { [ "$status" -ne 0 ] || status=1; }
    fi
    # Each results file of this task reduced here, into its digest beside it (results-<i>.digest),
    # which the merge folds instead of parsing the file (docs/fleet.md, "The merge at scale"). A
    # digest not written fails nothing: it is logged, and the merge reduces that file itself.
    for results in "$output/results-$index.json" "$output/results-$index".*.json; do
        [ -f "$results" ] || continue
        "$python" "$source/report/kcs_fleet.py" --digest "$results" > /dev/null ||
            echo "fleet.sh: no digest of $results (the merge will read the file itself)" >&2
    done
    exit "$status"
    ;;
merge)
    [ $# -ge 1 ] || usage
    output=$1
    shift
    # The history of this fleet's merges (docs/fleet.md, "History"): a folder that outlives one
    # run's OUTPUT when each run has its own (submit --history DIR).
    history="$output/history"
    if [ "${1:-}" = --history ]; then
        [ $# -ge 2 ] || die "--history needs a folder"
        history=$2
        shift 2
    fi
    exec "$python" "$source/report/kcs_fleet.py" "$output" --output "$output/report" --history "$history" "$@"
    ;;
submit)
    partition="" account="" time_limit="00:30:00" nodes=1 gpus=0 level=quick output="" kcs="$source/build/kcs"
    wait=0 dry_run=0 extra_step="" sbatch_extra="" history=""
    while [ $# -gt 0 ]; do
        case $1 in
        --partition) partition=$2; shift 2 ;;
        --account) account=$2; shift 2 ;;
        --time) time_limit=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --gpus) gpus=$2; shift 2 ;;
        --level) level=$2; shift 2 ;;
        --output) output=$2; shift 2 ;;
        --kcs) kcs=$2; shift 2 ;;
        --extra-step) extra_step=$2; shift 2 ;;
        --history) history=$2; shift 2 ;;
        --sbatch) sbatch_extra="$sbatch_extra $2"; shift 2 ;;
        --wait) wait=1; shift ;;
        --dry-run) dry_run=1; shift ;;
        --) shift; break ;;
        *) die "unknown submit option '$1' (tools/fleet.sh with no arguments lists them; docs/fleet.md)" ;;
        esac
    done
    level_options "$level" > /dev/null
    [ -n "$output" ] || die "submit needs --output DIR, a folder every node can write (a shared filesystem)"
    case $nodes$gpus in *[!0-9]*) die "--nodes and --gpus take counts" ;; esac
    if [ "$gpus" -gt 0 ]; then tasks=$gpus; else tasks=$nodes; fi
    [ "$tasks" -ge 1 ] || die "--nodes needs a count >= 1"
    mkdir -p "$output"
    output=$(cd "$output" && pwd)
    if [ -n "$history" ]; then
        mkdir -p "$history"
        history=$(cd "$history" && pwd)
    else
        history="$output/history"
    fi
    script="$output/fleet.sbatch"
    {
        echo "#!/bin/sh"
        echo "# Written by tools/fleet.sh submit: one kcs task per array index (docs/fleet.md)."
        echo "#SBATCH --job-name=kcs-fleet"
        echo "#SBATCH --array=0-$((tasks - 1))"
        echo "#SBATCH --output=$output/task-%a.log"
        echo "#SBATCH --ntasks=1"
        echo "#SBATCH --time=$time_limit"
        [ -n "$partition" ] && echo "#SBATCH --partition=$partition"
        [ -n "$account" ] && echo "#SBATCH --account=$account"
        if [ "$gpus" -gt 0 ]; then
            echo "#SBATCH --gpus-per-task=1"
        else
            echo "#SBATCH --nodes=1"
            echo "#SBATCH --exclusive"
        fi
        for option in $sbatch_extra; do echo "#SBATCH $option"; done
        [ -n "$extra_step" ] && printf 'export FLEET_EXTRA_STEP=%s\n' "'$(printf '%s' "$extra_step" | sed "s/'/'\\\\''/g")'"
        printf 'exec %s task %s %s %s --' "$source/tools/fleet.sh" "$output" "$level" "$kcs"
        for argument in "$@"; do printf " '%s'" "$(printf '%s' "$argument" | sed "s/'/'\\\\''/g")"; done
        echo
    } > "$script"
    echo "fleet.sh: wrote $script ($tasks tasks, level $level)"
    [ "$dry_run" -eq 1 ] && exit 0
    if [ "$wait" -eq 1 ]; then
        # Waits for every task, then merges here: the report is ready when this returns.
        sbatch --wait "$script" || echo "fleet.sh: some tasks failed (their results say why)"
        exec "$0" merge "$output" --history "$history" --expect-tasks "$tasks"
    fi
    job=$(sbatch --parsable "$script")
    job=${job%%;*}
    echo "fleet.sh: submitted job array $job"
    merge_job=$(sbatch --parsable --job-name=kcs-fleet-merge --dependency="afterany:$job" --ntasks=1 \
        ${partition:+--partition="$partition"} ${account:+--account="$account"} --time=00:10:00 \
        --output="$output/merge.log" --wrap="'$source/tools/fleet.sh' merge '$output' --history '$history' --expect-tasks $tasks")
    echo "fleet.sh: the merge, job ${merge_job%%;*}, writes $output/report/index.html when every task has ended"
    ;;
*) usage ;;
esac
