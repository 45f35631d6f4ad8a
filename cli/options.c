/* options.c - the one table of memplan's commands, options and rules.
 *
 * Each option is declared once: name, value, default, help and the
 * commands that take it. The parser (args.c), the help, the usage lines
 * and docs/cli.md's option lists (help.c, `memplan help --markdown CMD`)
 * read this table; the rules below refuse an option that would do nothing
 * where it is given. A row's `def` is applied through the option's own
 * parser (cli_option_set) before the command line is read, so the default
 * the help shows is the one the command uses. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#define C_PLAN CLI_C(PLAN)
#define C_OFFSETS CLI_C(OFFSETS)
#define C_VERIFY CLI_C(VERIFY)
#define C_SHAPES CLI_C(SHAPES)
#define C_CONVERT CLI_C(CONVERT)
#define C_VALIDATE CLI_C(VALIDATE)
#define C_POLICY CLI_C(OFFLOAD_POLICY)
#define C_CALIBRATE CLI_C(CALIBRATE)
#define C_SERVE CLI_C(SERVE)
/* the commands that load a model */
#define C_MODEL (C_PLAN | C_VERIFY | C_SHAPES | C_CONVERT | C_VALIDATE)
/* the commands that plan a model */
#define C_PLANS (C_PLAN | C_VALIDATE)
/* the commands that report progress (cli/progress.c) */
#define C_PROGRESS (C_PLAN | C_OFFSETS | C_POLICY | C_VALIDATE | C_SERVE)

#define G_INPUT "Model"
#define G_PLACE "Placement"
#define G_OUT "Output"
#define G_REPORT "Reports (docs/report.md)"
#define G_TRAIN "Training and recompute (docs/training.md)"
#define G_OFFLOAD "Offload (docs/offload.md)"
#define G_PAR "Multi-GPU training (docs/distributed.md)"
#define G_RUN "The run on the GPU (docs/validation.md)"
#define G_POLICY "Inference offload policy (docs/offload.md)"
#define G_SERVE "Serving (docs/serving.md)"

const cli_option cli_options[CLI_O_COUNT_] = {
    [CLI_O_DIM] = {"dim", 0, "NAME=VALUE", C_MODEL, G_INPUT, NULL, NULL,
        "bind a symbolic dim of an ONNX model; INPUT:AXIS=VALUE sets a dim "
        "of a graph input, also a fixed one (re-batching)",
        NULL, NULL, 1},
    [CLI_O_SHAPE] = {"shape", 0, "INPUT=D0xD1x...", C_MODEL, G_INPUT, NULL,
        NULL,
        "the whole shape of a graph input, e.g. q=1x8x128x64 (one declared "
        "with no shape)",
        NULL, NULL, 1},
    [CLI_O_BATCH] = {"batch", 0, "N", C_MODEL, G_INPUT, NULL, NULL,
        "re-batch an ONNX model exported at a fixed batch: the inputs' "
        "leading dim and the constants holding it (Reshape targets, Expand "
        "shapes, Resize sizes, bool masks; docs/onnx.md); plan and shapes "
        "report every rewrite",
        (const cli_variant[]){
            {C_PLANS, NULL, "1",
             "plan at batch N: an ONNX model exported at a fixed batch is "
             "re-batched (the inputs' leading dim and the constants holding "
             "it: Reshape targets, Expand shapes, Resize sizes, bool masks; "
             "docs/onnx.md; every rewrite is reported); a JSON "
             "graph is taken as being at batch N, what --maximize scales "
             "from (the Checkmate MLSys graphs are at 256 or 32); with "
             "validate --serve, the sequences generated"},
            {0, NULL, NULL, NULL}},
        NULL, 0},
    [CLI_O_SHOW_REWRITES] = {"show-rewrites", 0, NULL, C_PLAN | C_SHAPES,
        G_INPUT, NULL, NULL,
        "list every rewrite --batch made (inputs, masks, Reshape targets, "
        "Expand shapes, Resize sizes), one a line; the summary gives their "
        "number and --json lists each",
        NULL, NULL, 0},
    [CLI_O_NO_DECLARED] = {"no-declared-shapes", 0, NULL, C_CONVERT, G_INPUT,
        NULL, NULL,
        "ONNX: ignore value_info and the declared output shapes (infer "
        "everything)",
        NULL, NULL, 0},

    [CLI_O_ALIGN] = {"align", 0, "N", C_PLANS | C_OFFSETS | C_VERIFY, G_PLACE,
        "256", NULL,
        "alignment of arena offsets and sizes in bytes; units accepted, "
        "e.g. 4KiB",
        (const cli_variant[]){
            {C_OFFSETS, "1", NULL,
             "offset alignment in bytes (traces give exact sizes; sizes are "
             "rounded up to it); units accepted, e.g. 64B"},
            {C_VERIFY, "1", NULL,
             "the alignment every offset of the trace must have"},
            {0, NULL, NULL, NULL}},
        NULL, 0},
    [CLI_O_METHOD] = {"method", 0, "M", C_PLANS | C_OFFSETS, G_PLACE, "auto",
        NULL, "offsets method, one of:", NULL, cli_print_methods, 0},
    [CLI_O_SEED] = {"seed", 0, "S", C_PLANS | C_OFFSETS, G_PLACE, "0", NULL,
        "seed for randomized improvement passes; results are deterministic "
        "for a seed",
        (const cli_variant[]){
            {C_VALIDATE, NULL, NULL,
             "seed for randomized improvement passes and for the values of "
             "the run's inputs and weights"},
            {0, NULL, NULL, NULL}},
        NULL, 0},
    [CLI_O_TIME_LIMIT] = {"time-limit", 0, "SEC", C_PLANS | C_OFFSETS,
        G_PLACE, NULL, "each stage's own",
        "seconds the whole plan may take, counted from the start of the "
        "command: placement, --reorder, recompute and offload share what "
        "loading the graph left (at least a tenth)",
        (const cli_variant[]){
            {C_OFFSETS, NULL, "10",
             "seconds for the whole command: greedy passes, local search, "
             "repair and the exact tier share what reading the trace left "
             "(at least a tenth; writing the result comes on top)"},
            {0, NULL, NULL, NULL}},
        NULL, 0},
    [CLI_O_CAPACITY] = {"capacity", 0, "N", C_OFFSETS | C_VERIFY, G_PLACE,
        NULL, NULL,
        "ask for a packing within N bytes (units accepted, e.g. 1MiB); when "
        "there is none, or none is found, the best packing is still "
        "reported and written and the exit code is 4; the default method "
        "escalates to the exact tier when its greedy placements miss N; "
        "--method exact proves optimality or infeasibility",
        (const cli_variant[]){
            {C_VERIFY, NULL, "no limit",
             "the arena every buffer of the trace must end within; units "
             "accepted, e.g. 1MiB"},
            {0, NULL, NULL, NULL}},
        NULL, 0},
    [CLI_O_NO_INPLACE] = {"no-inplace", 0, NULL, C_PLAN, G_PLACE, NULL, NULL,
        "no in-place reuse (by default an output may take over an input "
        "that dies at its node, where the op allows it)",
        NULL, NULL, 0},
    [CLI_O_FUSE] = {"fuse", 0, NULL, C_PLANS, G_PLACE, NULL, NULL,
        "tensors inside fused pointwise chains take no memory "
        "(docs/memory-model.md)",
        NULL, NULL, 0},
    [CLI_O_REORDER] = {"reorder", 0, NULL, C_PLAN, G_PLACE, NULL, NULL,
        "memory-aware operator order; reports the lower bound before and "
        "after",
        NULL, NULL, 0},
    [CLI_O_ATTENTION] = {"attention", 0, "A", C_PLANS | C_VERIFY, G_PLACE,
        "fused", NULL,
        "fused: each scaled-dot-product attention chain (MatMul, scale, "
        "mask, Softmax, MatMul) is planned as one node, as PyTorch's "
        "scaled_dot_product_attention runs it (no T x T scores; in "
        "training its backward keeps Q, K, V, the output and the "
        "log-sum-exp; docs/attention.md); naive: the ops as exported",
        (const cli_variant[]){
            {C_VERIFY, NULL, "fused",
             "the attention mode the plan was made with (fused or naive): "
             "a fused plan names the fused nodes"},
            {0, NULL, NULL, NULL}},
        NULL, 0},

    [CLI_O_OUTPUT] = {"output", 'o', "FILE",
        C_PLAN | C_OFFSETS | C_CONVERT | C_CALIBRATE,
        G_OUT, NULL, NULL, "write the plan JSON (docs/plan-format.md)",
        (const cli_variant[]){
            {C_CALIBRATE, NULL, "standard output",
             "write the device profile JSON there (docs/cost-model.md); "
             "--device FILE reads it"},
            {C_OFFSETS, NULL, NULL,
             "write the trace with a fifth column `offset`"},
            {C_CONVERT, NULL, "standard output",
             "write the graph there: an ONNX model when FILE ends in .onnx, "
             "else memplan's JSON graph"},
            {0, NULL, NULL, NULL}},
        NULL, 0},
    [CLI_O_JSON] = {"json", 0, NULL,
        C_PLANS | C_OFFSETS | C_VERIFY | C_SHAPES | C_POLICY | C_SERVE, G_OUT,
        NULL, NULL, "print one JSON object instead of the summary", NULL,
        NULL, 0},
    [CLI_O_PROGRESS] = {"progress", 0, NULL, C_PROGRESS, G_OUT, NULL,
        "when stderr is a terminal",
        "progress of the long stages on stderr, one line each: the phase, "
        "the smallest peak found so far, the lower bound and the seconds "
        "(on a terminal one line rewritten in place, shown after a second "
        "of work); with --progress every stage ends with a line of its "
        "final figures, however quick",
        NULL, NULL, 0},
    [CLI_O_QUIET] = {"quiet", 'q', NULL, C_PROGRESS, G_OUT, NULL, NULL,
        "nothing on stderr but errors: no progress, even on a terminal",
        NULL, NULL, 0},

    [CLI_O_DOT] = {"dot", 0, "FILE", C_PLAN, G_REPORT, NULL, NULL,
        "write the graph as Graphviz DOT (render with dot -Tsvg); needs a "
        "build with Graphviz; with --dp or --pp, one file per distinct rank "
        "(FILE with .rankR, as -o)",
        NULL, NULL, 0},
    [CLI_O_COLLAPSE] = {"collapse", 0, "PREFIX|DEPTH|none", C_PLAN, G_REPORT,
        NULL, NULL,
        "in the DOT, draw the nodes whose name starts with PREFIX "
        "(comma-separated list), or each module of the first DEPTH "
        "'/'-separated name parts, as one box; none: every node (by "
        "default graphs of more than --dot-max-nodes nodes are collapsed "
        "to fit)",
        NULL, NULL, 0},
    [CLI_O_DOT_MAX_NODES] = {"dot-max-nodes", 0, "N", C_PLAN, G_REPORT,
        "120", NULL,
        "in the DOT, collapse a graph of more than N drawn nodes into at "
        "most N boxes (modules by name, else runs of consecutive ops; "
        "acyclic)",
        NULL, NULL, 0},
    [CLI_O_HTML] = {"html", 0, "FILE", C_PLAN, G_REPORT, NULL, NULL,
        "write the HTML report (timeline over the persistent memory and "
        "the budget, arena layout, recomputes and offloads, modules, peak "
        "tensors, lints; zoom and search; one file, no network); with "
        "--dp or --pp, every distinct rank on one page, their timelines "
        "side by side",
        NULL, NULL, 0},
    [CLI_O_TRACE] = {"trace", 0, "FILE", C_PLAN, G_REPORT, NULL, NULL,
        "write a Chrome trace (Perfetto) with memory counters (total and by "
        "tensor kind); with --dp or --pp, one file per distinct rank",
        NULL, NULL, 0},
    [CLI_O_MEMORY_VIZ] = {"memory-viz", 0, "FILE", C_PLAN, G_REPORT, NULL,
        NULL,
        "write the plan as a PyTorch memory snapshot (pickle) for "
        "pytorch.org/memory_viz and torch.cuda._memory_viz; with --dp or "
        "--pp, one file per distinct rank",
        NULL, NULL, 0},
    [CLI_O_KV_CONTEXT] = {"kv-context", 0, "N", C_PLAN, G_REPORT, "4096",
        NULL, "tokens for the KV-cache lint", NULL, NULL, 0},
    [CLI_O_NO_LINTS] = {"no-lints", 0, NULL, C_PLAN, G_REPORT, NULL, NULL,
        "skip the static lints", NULL, NULL, 0},

    [CLI_O_TRAIN] = {"train", 0, NULL, C_PLANS, G_TRAIN, NULL, NULL,
        "plan a training step: forward, loss, backward and optimizer step",
        NULL, NULL, 0},
    [CLI_O_OPTIMIZER] = {"optimizer", 0, "O", C_PLANS, G_TRAIN, "adam", NULL,
        "with --train: sgd, momentum, adam, adamw or adam8bit", NULL, NULL,
        0},
    [CLI_O_OPTIMIZER_IMPL] = {"optimizer-impl", 0, "I", C_PLANS, G_TRAIN,
        "foreach", NULL,
        "with --train: how Adam's step runs, as PyTorch names it: foreach "
        "(a temporary the size of all parameters), fused (none) or for-loop "
        "(one parameter's size)",
        NULL, NULL, 0},
    [CLI_O_PRECISION] = {"precision", 0, "P", C_PLANS, G_TRAIN, "32-true", NULL,
        "with --train: 32-true (or fp32), bf16-mixed, 16-mixed (or "
        "fp16-mixed), bf16-true, as PyTorch Lightning names them "
        "(docs/training.md)", NULL, NULL, 0},
    [CLI_O_STEP_IN_BACKWARD] = {"step-in-backward", 0, NULL, C_PLANS, G_TRAIN,
        NULL, NULL,
        "with --train: each parameter's optimizer step right after its "
        "gradient is complete (frees it)",
        NULL, NULL, 0},
    [CLI_O_SPLIT_WEIGHT_GRAD] = {"split-weight-grad", 0, NULL, C_PLANS,
        G_TRAIN, NULL, NULL,
        "with --train: weight gradients by a backward node of their own "
        "(input gradients die sooner)",
        NULL, NULL, 0},
    [CLI_O_TRAIN_ALL_WEIGHTS] = {"train-all-weights", 0, NULL, C_PLANS,
        G_TRAIN, NULL, NULL,
        "with --train: train every float weight. By default the weights "
        "no framework trains stay frozen: those of one element (constants "
        "exporters write as initializers: GELU's 0.5, a Pow exponent, an "
        "attention scale) and BatchNormalization's running mean and "
        "variance (buffers)",
        NULL, NULL, 0},
    [CLI_O_SAVE] = {"save", 0, "S", C_PLANS, G_TRAIN, "mincut", NULL,
        "with --train, without --budget: what backward keeps. mincut: the "
        "forward values saved are a minimum cut, the fewest bytes, from "
        "which cheap ops (pointwise, reductions, views) are recomputed in "
        "backward, as torch.compile's partitioner does; eager: every value "
        "backward reads is kept, as PyTorch eager does. The summary gives "
        "both peaks; the lower plan is kept",
        NULL, NULL, 0},
    [CLI_O_BUDGET] = {"budget", 0, "SIZE", C_PLANS, G_TRAIN, NULL, NULL,
        "peak (live arena + persistent) to fit, e.g. 12GiB: recompute "
        "chooses what to keep",
        NULL, NULL, 0},
    [CLI_O_SOLVER] = {"solver", 0, "S", C_PLANS, G_TRAIN, "auto", NULL,
        "recompute solver under --budget: auto, checkpoint-all, chen-sqrt, "
        "chen-greedy (chen), dtr, selective, lp, ilp, mincut; Checkmate's "
        "baselines as its code builds them: chen-linear, cm-checkpoint-all, "
        "cm-chen-sqrt, cm-chen-greedy",
        NULL, NULL, 0},
    [CLI_O_MAX_EXTRA] = {"max-extra", 0, "F", C_PLANS, G_TRAIN, NULL, NULL,
        "under --budget, at most F x the forward compute extra (e.g. 1: one "
        "extra forward pass)",
        NULL, NULL, 0},
    [CLI_O_MAXIMIZE] = {"maximize", 0, "batch", C_PLANS, G_TRAIN, NULL, NULL,
        "the largest batch whose plan meets --budget (and --max-extra): "
        "arena tensors scale with the batch, weights do not",
        NULL, NULL, 0},

    [CLI_O_DP] = {"dp", 0, "N", C_PLANS, G_PAR, NULL, NULL,
        "with --train: plan one rank of N data-parallel ranks. Prints one row "
        "per distinct rank (peak; parameters, gradients, optimizer state, "
        "activations, communication buffers at the peak; the peak step); -o "
        "FILE writes one plan per distinct rank, FILE with .rankR before its "
        "extension (plan.json: plan.rank0.json, R its first rank)",
        (const cli_variant[]){
            {C_VALIDATE, NULL, NULL,
             "with --train: run the plan of one rank (--rank) of N "
             "data-parallel ranks on this GPU, each collective a local copy "
             "of the same buffers (docs/distributed.md)"},
            {0, NULL, NULL, NULL}}, NULL, 0},
    [CLI_O_ZERO] = {"zero", 0, "K", C_PLANS, G_PAR, "0", NULL,
        "with --dp: ZeRO stage. 0: DDP (gradients all-reduced in buckets); "
        "1: optimizer state sharded (ceil(n/N) elements per rank); 2: "
        "gradients reduce-scattered too; 3: parameters sharded too (FSDP "
        "full sharding: a unit's parameters all-gathered before use in "
        "forward and in backward, freed after)",
        NULL, NULL, 0},
    [CLI_O_BUCKET_SIZE] = {"bucket-size", 0, "SIZE", C_PLANS, G_PAR, "25MiB",
        NULL,
        "with --dp and --zero 0-2: gradient bucket cap (DDP's bucket_cap_mb)",
        NULL, NULL, 0},
    [CLI_O_FSDP_UNIT] = {"fsdp-unit", 0, "PREFIX|layer", C_PLANS, G_PAR,
        "layer", NULL,
        "with --zero 3: the units gathered together. layer: a parameter's "
        "name up to its first number (h.3.attn.w: h.3); PREFIX: that prefix "
        "and the next name component; the rest form the unit root",
        NULL, NULL, 0},
    [CLI_O_PREFETCH] = {"prefetch", 0, "P", C_PLANS, G_PAR, "1", NULL,
        "with --zero 3: units all-gathered ahead of the one in use: 0, 1 or 2",
        NULL, NULL, 0},
    [CLI_O_OFFLOAD_OPTIMIZER] = {"offload-optimizer", 0, NULL, C_PLANS, G_PAR,
        NULL, NULL,
        "with --dp or --pp: the optimizer state and step on the host "
        "(ZeRO-Offload): not in device memory; the host bytes are reported",
        NULL, NULL, 0},
    [CLI_O_PP] = {"pp", 0, "N", C_PLANS, G_PAR, NULL, NULL,
        "with --train: N pipeline stages (ranks = dp x N), each stage's plan "
        "holding the activations of the micro-batches its schedule keeps in "
        "flight, with Send/Recv buffers",
        (const cli_variant[]){
            {C_VALIDATE, NULL, NULL,
             "with --train: N pipeline stages; --rank chooses the stage whose "
             "plan runs on this GPU (Send reads its buffer, Recv fills its "
             "own)"},
            {0, NULL, NULL, NULL}}, NULL, 0},
    [CLI_O_MICROBATCHES] = {"microbatches", 0, "M", C_PLANS, G_PAR, NULL,
        "the --pp value",
        "with --pp: micro-batches per step (at least --pp); the model's batch "
        "is one micro-batch",
        NULL, NULL, 0},
    [CLI_O_SCHEDULE] = {"schedule", 0, "S", C_PLANS, G_PAR, "1f1b", NULL,
        "with --pp: gpipe (every stage holds M micro-batches), 1f1b (stage s "
        "of p holds p-s) or interleaved-1f1b (Megatron-LM's, with "
        "--virtual-stages)",
        NULL, NULL, 0},
    [CLI_O_VIRTUAL_STAGES] = {"virtual-stages", 0, "V", C_PLANS, G_PAR, "2",
        NULL,
        "with --schedule interleaved-1f1b: model chunks per rank (the graph "
        "cut into pp x V chunks, rank r holding chunks r, r+pp, ...; its "
        "micro-batches in flight as Megatron-LM's interleaved schedule)",
        NULL, NULL, 0},
    [CLI_O_PP_CUTS] = {"pp-cuts", 0, "NODES", C_PLANS, G_PAR, NULL,
        "balanced as --pp-balance says",
        "with --pp: N-1 forward node names, comma separated, each the last "
        "node of a stage",
        NULL, NULL, 0},
    [CLI_O_PP_BALANCE] = {"pp-balance", 0, "B", C_PLANS, G_PAR, "memory",
        NULL,
        "with --pp and no --pp-cuts: what the stages balance: memory (the "
        "forward nodes' output bytes and 4 x their parameters' bytes) or "
        "compute (the forward nodes' FLOPs)",
        NULL, NULL, 0},
    [CLI_O_TP] = {"tp", 0, "N", C_PLANS | C_SERVE, G_PAR, NULL, NULL,
        "with --train: N tensor-parallel ranks (ranks = tp x dp x pp, "
        "numbered tp fastest, then dp, then pp, as Megatron-LM's): the "
        "transformer blocks recognized in the graph (a MatMul/Gemm pair "
        "around attention or an MLP activation) split as Megatron's: the "
        "first layers column-parallel (heads split), the second row-parallel "
        "with an AllReduce of its output, and of the block input's gradient "
        "in backward; prints how many blocks were split",
        (const cli_variant[]){
            {C_SERVE, "1", NULL,
             "tensor-parallel GPUs: attention heads, KV heads (replicated "
             "when fewer than N), FFN and vocabulary split over them; "
             "figures are per GPU"},
            {0, NULL, NULL, NULL}}, NULL, 0},
    [CLI_O_SP] = {"sp", 0, NULL, C_PLANS, G_PAR, NULL, NULL,
        "with --tp: sequence parallelism (Megatron-LM's): the nodes between "
        "the blocks (LayerNorm, residual Add, dropout, the row layers' "
        "biases) run on 1/tp of the sequence; a ReduceScatter after the "
        "row-parallel layer instead of its AllReduce, an AllGather before "
        "the column-parallel ones (again in backward), the gradients the "
        "other way",
        NULL, NULL, 0},
    [CLI_O_RANK] = {"rank", 0, "R", C_VALIDATE, G_PAR, "0", NULL,
        "with --dp or --pp: the rank whose plan runs (ranks are numbered "
        "stage x dp + data-parallel index); its collectives run as local "
        "operations on the same buffers: an all-reduce copies its gradients "
        "into the bucket, a reduce-scatter copies rank R's slice, an "
        "all-gather copies the shard into each slice, Send reads, Recv "
        "fills; the memory measured is what the rank holds in a real run",
        NULL, NULL, 0},
    [CLI_O_RANKS] = {"ranks", 0, "N", C_VALIDATE, G_PAR, NULL, NULL,
        "with --dp, --tp or --pp: run every rank's plan at once, one "
        "process per GPU (N = tp x dp x pp GPUs), the collectives as NCCL "
        "calls on the planned buffers, each on its group's communicator "
        "(tensor-parallel: summed; data-parallel: averaged) (NCCL loaded at "
        "run time: $MEMPLAN_NCCL, then the loader's path); one row per rank, "
        "and the loss and the weights after the step compared across "
        "data-parallel replicas (same stage and tensor-parallel index)",
        NULL, NULL, 0},
    [CLI_O_OFFLOAD] = {"offload", 0, NULL, C_PLANS, G_OFFLOAD, NULL, NULL,
        "move idle tensors to host memory (OFFLOAD / PREFETCH steps) to fit "
        "--budget",
        (const cli_variant[]){
            {C_VALIDATE, NULL, NULL,
             "plan offload under --budget (OFFLOAD/PREFETCH steps copy to "
             "pinned host memory and back)"},
            {0, NULL, NULL, NULL}},
        NULL, 0},
    [CLI_O_DEVICE] = {"device", 0, "D",
        C_PLANS | C_POLICY | C_CALIBRATE | C_SERVE,
        G_OFFLOAD, "h200",
        NULL,
        "the cost model of --offload (and of --train's nodes): h200, h100, "
        "a100, l4, t4 or a device profile JSON (memplan calibrate writes "
        "one)",
        (const cli_variant[]){
            {C_VALIDATE, NULL, NULL,
             "the cost model of --offload, of --train's nodes and of the "
             "predicted time: h200, h100, a100, l4, t4 or a device profile "
             "JSON (memplan calibrate writes one)"},
            {C_CALIBRATE, NULL, NULL,
             "the name written into the profile (its \"name\")"},
            {C_POLICY, "t4", NULL,
             "t4 (FlexGen's fitted T4 machine), a builtin device (h200, "
             "h100, a100, l4) or a device profile JSON"},
            {C_SERVE, NULL, NULL,
             "the GPU served on (its memory): h200, h100, a100, l4, t4 or a "
             "device profile JSON; the what-if table covers every builtin"},
            {0, NULL, NULL, NULL}},
        NULL, 0},
    [CLI_O_OFFLOAD_SOLVER] = {"offload-solver", 0, "S", C_PLANS, G_OFFLOAD,
        "auto", NULL,
        "with --offload: greedy, ilp (offload only), joint (per tensor "
        "keep / recompute / offload, the fastest plan on the device's cost "
        "model) or auto (joint unless --solver checkpoint-all forbids "
        "recompute)",
        NULL, NULL, 0},

    [CLI_O_PLAN] = {"plan", 0, "FILE", C_VALIDATE, G_RUN, NULL,
        "plan it now", "validate this plan", NULL, NULL, 0},
    [CLI_O_NO_REFERENCE] = {"no-reference", 0, NULL, C_VALIDATE, G_RUN, NULL,
        NULL, "skip the reference run", NULL, NULL, 0},
    [CLI_O_POISON] = {"poison", 0, NULL, C_VALIDATE, G_RUN, NULL, NULL,
        "fill freed blocks with 0xff in the planned run", NULL, NULL, 0},
    [CLI_O_DUMP] = {"dump", 0, "DIR", C_VALIDATE, G_RUN, NULL, NULL,
        "write the inputs, weights and outputs of the planned run to "
        "DIR/values.{txt,bin} (for validate/ort_compare.py), and of a "
        "training step the weights after it and each parameter's gradient "
        "(validate/torch_grad_check.py); DIR is made when missing",
        NULL, NULL, 0},
    [CLI_O_WEIGHTS] = {"weights", 0, "DIR", C_VALIDATE | C_SERVE, G_RUN,
        NULL, "random",
        "the weights' values from DIR/values.{txt,bin}, the format --dump "
        "writes (lines of kind weight, by tensor name; dtype and bytes must "
        "match): every weight must be there but small constants the model "
        "holds (optimizer states start at zero); with --lower-only the "
        "files are only checked",
        (const cli_variant[]){
            {C_SERVE, "16bit", NULL,
             "weight precision of the linear layers: 16bit (the config's "
             "bf16 or fp16; also bf16, fp16), int8, int4 (GPTQ/AWQ-style: "
             "an fp16 scale and a 4-bit zero point per --group-size input "
             "channels) or fp8 (one fp32 scale per matrix); embeddings, "
             "norms and the LM head stay 16-bit"},
            {0, NULL, NULL, NULL}},
        NULL, 0},
    [CLI_O_INPUTS] = {"inputs", 0, "DIR", C_VALIDATE, G_RUN, NULL, "random",
        "the graph inputs' values from DIR/values.{txt,bin} (lines of kind "
        "input, by name; every input must be there); with --lower-only the "
        "files are only checked",
        NULL, NULL, 0},
    [CLI_O_LOWER_ONLY] = {"lower-only", 0, NULL, C_VALIDATE, G_RUN, NULL,
        NULL,
        "print how each node is lowered (kernel or synthetic, and why); "
        "needs no GPU",
        NULL, NULL, 0},
    [CLI_O_STEP_TIMES] = {"step-times", 0, NULL, C_VALIDATE, G_RUN, NULL,
        NULL,
        "time every step with CUDA events in a run of its own, with no "
        "memory samples between steps (they stall the stream): the "
        "measured times of --json's by_op come from it "
        "(bench/time_vs_measured.py)",
        NULL, NULL, 0},

    [CLI_O_SERVE] = {"serve", 0, NULL, C_VALIDATE, G_RUN, NULL, NULL,
        "MODEL is an LLM config (as memplan serve reads it): run a "
        "generation on the GPU, the prefill of --prompt tokens for --batch "
        "sequences and --gen decode steps, with the KV cache paged in "
        "blocks of --block-size as planned, then again with a contiguous "
        "cache, and compare tokens, final logits and the cache "
        "(docs/serving.md, \"The executor run\")",
        NULL, NULL, 0},
    [CLI_O_CONV_MATH] = {"conv-math", 0, "M", C_VALIDATE, G_RUN, "tf32",
        NULL,
        "the float32 convolutions' arithmetic on cuDNN: tf32 (tensor cores, "
        "as PyTorch runs them by default: torch.backends.cudnn.allow_tf32) "
        "or fp32 (FMA only, for comparisons with a float32 or float64 "
        "reference: validate/train_check.py, torch_grad_check.py); either "
        "way a deterministic algorithm: with tf32 the fastest of the "
        "candidates timed, with fp32 cuDNN's first that fits and runs, so "
        "that every run computes bit for bit alike",
        NULL, NULL, 0},

    [CLI_O_PROMPT] = {"prompt", 0, "N", C_POLICY | C_VALIDATE, G_POLICY,
        "512", NULL, "prompt length",
        (const cli_variant[]){
            {C_VALIDATE, NULL, NULL,
             "with --serve: prompt tokens of each sequence, prefilled in "
             "one forward pass (--batch x N at most 16384)"},
            {0, NULL, NULL, NULL}},
        NULL, 0},
    [CLI_O_GEN] = {"gen", 0, "N", C_POLICY | C_VALIDATE, G_POLICY, "32",
        NULL, "tokens generated",
        (const cli_variant[]){
            {C_VALIDATE, "64", NULL,
             "with --serve: decode steps after the prefill, each one token "
             "a sequence (greedy)"},
            {0, NULL, NULL, NULL}},
        NULL, 0},
    [CLI_O_GPU_BATCH] = {"gpu-batch", 0, "N", C_POLICY, G_POLICY, NULL,
        "searched", "fix the GPU batch size", NULL, NULL, 0},
    [CLI_O_NUM_BATCHES] = {"num-batches", 0, "N", C_POLICY, G_POLICY, NULL,
        "searched", "fix the number of GPU batches", NULL, NULL, 0},
    [CLI_O_PERCENT] = {"percent", 0, "WG,WC,CG,CC,HG,HC", C_POLICY, G_POLICY,
        NULL, "all solved",
        "fix the percent of the weights (W), KV cache (C) and activations "
        "(H) on GPU (G) and CPU (C); '-' leaves one to the LP",
        NULL, NULL, 0},
    [CLI_O_COMPRESS_WEIGHTS] = {"compress-weights", 0, "4bit|none", C_POLICY,
        G_POLICY, "none", NULL, "group-wise 4-bit compression of the weights",
        NULL, NULL, 0},
    [CLI_O_COMPRESS_KV] = {"compress-kv", 0, "4bit|none", C_POLICY, G_POLICY,
        "none", NULL, "group-wise 4-bit compression of the KV cache", NULL,
        NULL, 0},
    [CLI_O_GPU_MEM] = {"gpu-mem", 0, "SIZE", C_POLICY | C_SERVE, G_POLICY,
        NULL, "the device's", "override the GPU memory", NULL, NULL, 0},
    [CLI_O_CPU_MEM] = {"cpu-mem", 0, "SIZE", C_POLICY, G_POLICY, NULL,
        "the device's", "override the CPU memory", NULL, NULL, 0},
    [CLI_O_DISK_MEM] = {"disk-mem", 0, "SIZE", C_POLICY, G_POLICY, NULL,
        "the device's", "override the disk space", NULL, NULL, 0},
    [CLI_O_ALPHA] = {"alpha", 0, "A", C_POLICY, G_POLICY, "0.8", NULL,
        "usable share of each tier's memory (FlexGen relaxes it to 1.2 to "
        "evaluate a given policy)",
        NULL, NULL, 0},
    [CLI_O_GROUP_SIZE] = {"group-size", 0, "N", C_SERVE, G_SERVE, "128", NULL,
        "input channels per quantization group of --weights int4 or int8 "
        "(0: one group per output channel)", NULL, NULL, 0},
    [CLI_O_KV_DTYPE] = {"kv-dtype", 0, "D", C_SERVE | C_VALIDATE, G_SERVE,
        NULL,
        "the config's dtype",
        "KV cache dtype: bf16, fp16 or fp8 (e4m3; fp8_e5m2 also)",
        (const cli_variant[]){
            {C_VALIDATE, NULL, NULL,
             "with --serve: the KV cache's dtype, the model's (the "
             "executor's kernels read and write bf16 or fp32; another is "
             "refused)"},
            {0, NULL, NULL, NULL}},
        NULL, 0},
    [CLI_O_KV_LAYOUT] = {"kv-layout", 0, "L", C_SERVE, G_SERVE, "paged", NULL,
        "paged: blocks of --block-size tokens allocated as sequences grow "
        "(vLLM's PagedAttention); contiguous: every sequence reserves "
        "--max-model-len tokens", NULL, NULL, 0},
    [CLI_O_BLOCK_SIZE] = {"block-size", 0, "N", C_SERVE | C_VALIDATE,
        G_SERVE, "16", NULL,
        "tokens per KV block (paged layout)",
        (const cli_variant[]){
            {C_VALIDATE, NULL, NULL,
             "with --serve: tokens per KV block of the paged run"},
            {0, NULL, NULL, NULL}},
        NULL, 0},
    [CLI_O_MAX_MODEL_LEN] = {"max-model-len", 0, "N", C_SERVE, G_SERVE, NULL,
        "max_position_embeddings, else 8192",
        "context of one sequence, prompt and output (tokens)", NULL, NULL, 0},
    [CLI_O_MAX_BATCHED_TOKENS] = {"max-batched-tokens", 0, "N", C_SERVE,
        G_SERVE, "8192", NULL,
        "tokens of one forward pass: the prefill chunk whose peak is "
        "planned (chunked prefill)", NULL, NULL, 0},
    [CLI_O_MAX_SEQS] = {"max-seqs", 0, "N", C_SERVE, G_SERVE, "256", NULL,
        "sequences of one decode step (the scheduler's limit)", NULL, NULL,
        0},
    [CLI_O_CUDA_GRAPH_SIZES] = {"cuda-graph-sizes", 0, "N,N,...|none",
        C_SERVE, G_SERVE, NULL,
        "vLLM's: 1, 2, 4, 8, 16, ... up to min(2 x --max-seqs, 512)",
        "decode batch sizes captured as CUDA graphs; they share one memory "
        "pool, captured largest first, which holds the largest one's "
        "forward activations; none: eager", NULL, NULL, 0},
    [CLI_O_GPU_UTIL] = {"gpu-util", 0, "F", C_SERVE, G_SERVE, "0.9", NULL,
        "share of each GPU's memory the server may use, as vLLM's "
        "--gpu-memory-utilization", NULL, NULL, 0},
    [CLI_O_RUNTIME_RESERVE] = {"runtime-reserve", 0, "SIZE", C_SERVE, G_SERVE,
        NULL, "531 MiB (+256 MiB with --tp > 1)",
        "memory outside the planned tensors: CUDA context, library "
        "workspaces, NCCL buffers (the CUDA context measured on the H200: "
        "docs/validation.md)", NULL, NULL, 0},
    [CLI_O_LENGTHS] = {"lengths", 0, "FILE|DIST", C_SERVE, G_SERVE, NULL,
        "every request at --max-model-len",
        "request lengths for the fragmentation figures: a file of one "
        "length a line, or 1000 lengths of fixed:L, uniform:MIN:MAX, "
        "exponential:MEAN or lognormal:MEDIAN:SIGMA", NULL, NULL, 0},
    [CLI_O_SHARED_PREFIX] = {"shared-prefix", 0, "TOKENS", C_SERVE, G_SERVE,
        "0", NULL,
        "tokens every request shares (a system prompt): its full blocks "
        "are stored once (prefix caching; paged layout)", NULL, NULL, 0},
};

/* ---- what does nothing where ------------------------------------------- */
#define READ_PLAN "the plan is read from --plan FILE, not made"
#define LOWER_ONLY "--lower-only prints the lowering and runs nothing"
#define SERVE_ONLY "it sizes the generation that --serve runs"
#define SERVE_PLANS "--serve builds and plans the generation's graphs itself"

const cli_rule cli_rules[] = {
    {C_PLAN | C_SHAPES, CLI_O_SHOW_REWRITES, CLI_O_BATCH, 1,
     "only --batch rewrites the model"},
    {C_PLAN | C_SHAPES, CLI_O_SHOW_REWRITES, CLI_O_JSON, 0,
     "--json lists every rewrite"},
    {C_PLANS, CLI_O_OPTIMIZER, CLI_O_TRAIN, 1,
     "the optimizer is part of the training step that --train plans"},
    {C_PLANS, CLI_O_OPTIMIZER_IMPL, CLI_O_TRAIN, 1,
     "the optimizer is part of the training step that --train plans"},
    {C_PLANS, CLI_O_PRECISION, CLI_O_TRAIN, 1,
     "the precision is that of the training step that --train plans"},
    {C_PLANS, CLI_O_STEP_IN_BACKWARD, CLI_O_TRAIN, 1,
     "it orders the optimizer step of the training step that --train plans"},
    {C_PLANS, CLI_O_SPLIT_WEIGHT_GRAD, CLI_O_TRAIN, 1,
     "it shapes the backward pass of the training step that --train plans"},
    {C_PLANS, CLI_O_TRAIN_ALL_WEIGHTS, CLI_O_TRAIN, 1,
     "it chooses what the training step that --train plans trains"},
    {C_PLANS, CLI_O_SAVE, CLI_O_TRAIN, 1,
     "it chooses what the backward pass of --train keeps"},
    {C_PLANS, CLI_O_DP, CLI_O_TRAIN, 1,
     "data parallelism splits the training step that --train plans"},
    {C_PLANS, CLI_O_PP, CLI_O_TRAIN, 1,
     "pipeline stages split the training step that --train plans"},
    {C_PLANS, CLI_O_TP, CLI_O_TRAIN, 1,
     "tensor parallelism splits the training step that --train plans"},
    {C_PLANS, CLI_O_SP, CLI_O_TP, 1,
     "sequence parallelism splits along the tensor-parallel ranks: give "
     "--tp N"},
    {C_PLANS, CLI_O_ZERO, CLI_O_DP, 1,
     "ZeRO shards across data-parallel ranks: give --dp N"},
    {C_PLANS, CLI_O_BUCKET_SIZE, CLI_O_DP, 1,
     "buckets hold the gradients reduced across data-parallel ranks: give "
     "--dp N"},
    {C_PLANS, CLI_O_FSDP_UNIT, CLI_O_ZERO, 1,
     "units are what ZeRO-3 gathers: give --dp N --zero 3"},
    {C_PLANS, CLI_O_PREFETCH, CLI_O_ZERO, 1,
     "prefetch gathers ZeRO-3's next units: give --dp N --zero 3"},
    {C_PLANS, CLI_O_MICROBATCHES, CLI_O_PP, 1,
     "micro-batches are what pipeline stages run: give --pp N"},
    {C_PLANS, CLI_O_SCHEDULE, CLI_O_PP, 1,
     "the schedule orders pipeline stages: give --pp N"},
    {C_PLANS, CLI_O_VIRTUAL_STAGES, CLI_O_SCHEDULE, 1,
     "virtual stages are interleaved 1F1B's: give --pp N --schedule "
     "interleaved-1f1b"},
    {C_PLANS, CLI_O_PP_CUTS, CLI_O_PP, 1,
     "cut points split pipeline stages: give --pp N"},
    {C_PLANS, CLI_O_PP_BALANCE, CLI_O_PP, 1,
     "the balance splits pipeline stages: give --pp N"},
    {C_PLANS, CLI_O_PP_BALANCE, CLI_O_PP_CUTS, 0,
     "cut points given by name are not balanced: give one of --pp-cuts "
     "and --pp-balance"},
    {C_PLANS, CLI_O_DP, CLI_O_BUDGET, 0,
     "per-rank plans are not made under a budget yet"},
    {C_PLANS, CLI_O_PP, CLI_O_BUDGET, 0,
     "per-rank plans are not made under a budget yet"},
    {C_PLANS, CLI_O_SOLVER, CLI_O_BUDGET, 1,
     "it chooses how recompute fits the budget"},
    {C_PLANS, CLI_O_MAX_EXTRA, CLI_O_BUDGET, 1,
     "it bounds the recompute that fits the budget"},
    {C_PLANS, CLI_O_MAXIMIZE, CLI_O_BUDGET, 1,
     "the largest batch is the one whose plan fits the budget"},
    {C_PLANS, CLI_O_OFFLOAD, CLI_O_BUDGET, 1,
     "offload moves tensors to host memory to fit the budget"},
    {C_PLANS, CLI_O_OFFLOAD_SOLVER, CLI_O_OFFLOAD, 1,
     "it chooses how --offload fits the budget"},
    {C_PLAN, CLI_O_DEVICE, CLI_O_OFFLOAD, 1,
     "the device's cost model times the offload plan's transfers"},
    {C_PLAN, CLI_O_COLLAPSE, CLI_O_DOT, 1,
     "it groups the nodes of the DOT graph"},
    {C_PROGRESS, CLI_O_PROGRESS, CLI_O_QUIET, 0,
     "--quiet prints no progress"},
    {C_PLAN, CLI_O_DOT_MAX_NODES, CLI_O_DOT, 1,
     "it sets when the DOT graph is collapsed"},
    {C_PLAN, CLI_O_KV_CONTEXT, CLI_O_NO_LINTS, 0,
     "it sizes the KV-cache lint, and --no-lints skips the lints"},
    {C_VALIDATE, CLI_O_ALIGN, CLI_O_PLAN, 0, READ_PLAN},
    {C_VALIDATE, CLI_O_METHOD, CLI_O_PLAN, 0, READ_PLAN},
    {C_VALIDATE, CLI_O_TIME_LIMIT, CLI_O_PLAN, 0, READ_PLAN},
    {C_VALIDATE, CLI_O_BUDGET, CLI_O_PLAN, 0, READ_PLAN},
    {C_VALIDATE, CLI_O_OFFLOAD, CLI_O_PLAN, 0, READ_PLAN},
    {C_VALIDATE, CLI_O_JSON, CLI_O_LOWER_ONLY, 0, LOWER_ONLY},
    {C_VALIDATE, CLI_O_NO_REFERENCE, CLI_O_LOWER_ONLY, 0, LOWER_ONLY},
    {C_VALIDATE, CLI_O_POISON, CLI_O_LOWER_ONLY, 0, LOWER_ONLY},
    {C_VALIDATE, CLI_O_DUMP, CLI_O_LOWER_ONLY, 0, LOWER_ONLY},
    {C_VALIDATE, CLI_O_STEP_TIMES, CLI_O_LOWER_ONLY, 0, LOWER_ONLY},
    {C_VALIDATE, CLI_O_CONV_MATH, CLI_O_LOWER_ONLY, 0, LOWER_ONLY},
    {C_VALIDATE, CLI_O_PROMPT, CLI_O_SERVE, 1, SERVE_ONLY},
    {C_VALIDATE, CLI_O_GEN, CLI_O_SERVE, 1, SERVE_ONLY},
    {C_VALIDATE, CLI_O_BLOCK_SIZE, CLI_O_SERVE, 1, SERVE_ONLY},
    {C_VALIDATE, CLI_O_KV_DTYPE, CLI_O_SERVE, 1, SERVE_ONLY},
    {C_VALIDATE, CLI_O_SERVE, CLI_O_PLAN, 0, SERVE_PLANS},
    {C_VALIDATE, CLI_O_SERVE, CLI_O_TRAIN, 0, SERVE_PLANS},
    {C_VALIDATE, CLI_O_SERVE, CLI_O_BUDGET, 0, SERVE_PLANS},
    {C_VALIDATE, CLI_O_SERVE, CLI_O_DP, 0, SERVE_PLANS},
    {C_VALIDATE, CLI_O_SERVE, CLI_O_PP, 0, SERVE_PLANS},
    {C_VALIDATE, CLI_O_SERVE, CLI_O_TP, 0, SERVE_PLANS},
    {C_VALIDATE, CLI_O_SERVE, CLI_O_RANKS, 0, SERVE_PLANS},
    {C_VALIDATE, CLI_O_SERVE, CLI_O_DUMP, 0, SERVE_PLANS},
    {C_VALIDATE, CLI_O_SERVE, CLI_O_WEIGHTS, 0, SERVE_PLANS},
    {C_VALIDATE, CLI_O_SERVE, CLI_O_INPUTS, 0, SERVE_PLANS},
    {C_SERVE, CLI_O_GROUP_SIZE, CLI_O_WEIGHTS, 1,
     "groups are those of quantized weights: give --weights int4 or int8"},
    {0, 0, 0, 0, NULL},
};

/* ---- the commands ---------------------------------------------------------- */
const cli_command cli_commands[CLI_CMD_COUNT_] = {
    [CLI_CMD_PLAN] = {"plan", "INPUT", 1, 1,
        "plan a graph: lifetimes, arena offsets, peak and its tensors",
        "Loads a graph (ONNX when built with it, memplan JSON, or networkx "
        "node-link JSON), builds the default schedule (topological order, "
        "each arena tensor freed after its last use), places every tensor "
        "in one arena and prints the figures: persistent bytes (weights, "
        "constants), the lower bound (max live arena bytes), the arena, the "
        "peak (arena + persistent), and the step where live bytes peak with "
        "the largest tensors there.",
        NULL,
        "memplan plan examples/resnet50.json\n"
        "memplan plan examples/resnet50.json -o plan.json --align 64\n"
        "memplan plan examples/mlp.onnx --json --method size-bestfit\n"
        "memplan plan examples/mlp.onnx --html report.html --dot g.dot --collapse 2\n"
        "memplan plan examples/mlp.onnx --train --budget 12GiB --solver auto\n"
        "memplan plan g.json --budget 12GiB --offload --device h200 --json\n"},
    [CLI_CMD_OFFSETS] = {"offsets", "TRACE.csv", 1, 1,
        "place the buffers of a trace (id,lower,upper,size CSV)",
        "Reads a MiniMalloc trace (CSV with header id,lower,upper,size: a "
        "buffer of `size` bytes live on the half-open interval "
        "[lower, upper)), places every buffer in one arena so that buffers "
        "live at the same time do not overlap, and reports the arena "
        "against the lower bound (max over time of live bytes). A fifth "
        "column `offset` in the input is ignored.",
        NULL,
        "memplan offsets examples/trace.csv\n"
        "memplan offsets examples/trace.csv -o placed.csv && memplan verify placed.csv\n"
        "memplan offsets examples/trace.csv --json --method naive\n"
        "memplan offsets examples/trace.csv --method exact --capacity 1MiB\n"},
    [CLI_CMD_VERIFY] = {"verify", "INPUT PLAN.json | TRACE.csv", 1, 2,
        "check a plan against its graph, or a trace's offsets",
        "With a graph and a plan: replays the plan against the graph and "
        "checks every invariant (each input of a step is resident when it "
        "runs, every arena tensor is placed, no two resident tensors "
        "overlap, every block lies in the arena and is aligned, the plan's "
        "figures equal the replayed ones). The model is loaded as plan "
        "loads it (--dim, --shape, --batch).\n\n"
        "With one trace (id,lower,upper,size,offset CSV, as written by "
        "'memplan offsets -o'): checks that buffers live at the same time "
        "do not overlap, that offsets are aligned and that every buffer "
        "ends within the capacity.\n\n"
        "Prints 'valid: ...' and exits 0 when valid; otherwise prints the "
        "first violation to stderr and exits 5.",
        "--dim, --shape and --batch apply to a model, --capacity and "
        "--align to a trace.",
        "memplan verify examples/resnet50.json plan.json\n"
        "memplan verify placed.csv --capacity 1MiB\n"},
    [CLI_CMD_SHAPES] = {"shapes", "MODEL", 1, 1,
        "print every tensor's dtype and shape (ONNX: with --dim)",
        "Loads a graph (ONNX model or JSON graph), infers every shape and "
        "prints one line per tensor: name, dtype, shape ('?' for a dim "
        "memplan could not resolve), bytes and kind; then the number of "
        "tensors whose shape is not fully known (unknown_shapes). Symbolic "
        "dims left unbound are no error here: the dims and bytes that "
        "depend on them are '?' (null in --json), with a note naming them.",
        NULL,
        "memplan shapes examples/mlp.onnx --dim image:0=8\n"},
    [CLI_CMD_CONVERT] = {"convert", "MODEL", 1, 1,
        "write a model (ONNX) as a memplan JSON graph",
        "Reads a model (ONNX, or a JSON graph) and writes memplan's JSON "
        "graph with the shapes memplan inferred (to stdout without -o), or, "
        "when the output ends in .onnx, an ONNX model (weights keep dims "
        "and dtype; their data is written only where memplan holds it: see "
        "docs/onnx.md).",
        NULL,
        "memplan convert examples/mlp.onnx -o graph.json\n"
        "memplan convert graph.json -o model.onnx\n"},
    [CLI_CMD_VALIDATE] = {"validate", "MODEL", 1, 1,
        "run the plan on a GPU: measured against predicted memory",
        "Runs the plan of MODEL on the GPU (one arena of the planned size, "
        "every tensor at its planned offset, the schedule step by step) and "
        "prints predicted against measured device memory (arena, "
        "workspace, weights; CUDA context, cuBLAS and cuDNN apart), time per "
        "step and in total against the cost model's prediction, and the "
        "checks: outputs bit-identical to a reference run with one "
        "allocation per tensor, and the reference run's live bytes (summed "
        "by the executor) against the planner's lower bound. Exits 5 when "
        "a check fails. The CUDA executor is a program of its own, "
        "memplan-validate, which memplan runs.\n\n"
        "With --serve, MODEL is an LLM config: the graph of a whole "
        "generation (the prefill of --prompt tokens for --batch sequences, "
        "then --gen greedy decode steps) is built with the KV cache paged "
        "in blocks of --block-size (a persistent tensor, read and written "
        "through a block table) and again with a contiguous cache; both "
        "are planned and run as above, and the tokens, the last step's "
        "logits and the cache in sequence order must be the same bytes "
        "(docs/serving.md).",
        "Built without CUDA, it loads and lowers the model (which kernel "
        "runs each node) and exits 3 before touching a GPU.",
        "memplan validate examples/tiny.json\n"
        "memplan validate examples/offload/skip_chain.json --budget 850MiB "
        "--offload --json\n"
        "memplan validate examples/mlp.onnx --lower-only\n"
        "memplan validate examples/serve/small-llama.json --serve --batch 8 "
        "--prompt 512 --gen 64 --json\n"},
    [CLI_CMD_OFFLOAD_POLICY] = {"offload-policy", "CONFIG.json", 1, 1,
        "FlexGen-style offload policy for LLM inference",
        "For a decoder-only transformer (its Hugging Face config.json: "
        "layers, hidden size, heads, KV heads, FFN size, dtype), searches "
        "the GPU batch size and the number of GPU batches and solves, for "
        "each, FlexGen's linear program over the fractions of the weights, "
        "KV cache and activations kept on GPU, CPU and disk (GLPK). Reports "
        "the best policy, its estimated generation throughput and the "
        "memory of each tier (docs/offload.md).",
        NULL,
        "memplan offload-policy examples/llm/opt-30b.json --device t4\n"},
    [CLI_CMD_CALIBRATE] = {"calibrate", "", 0, 0,
        "measure the GPU's kernels: a calibrated device profile",
        "Times, on GPU 0 with CUDA events (medians of 7), what the cost "
        "model needs to predict the executor's step time: GEMM throughput "
        "by shape class (skinny, small, medium, large; float32 as the "
        "executor runs it, bfloat16 through cublasGemmEx), convolution "
        "throughput (1x1, spatial, depthwise) and fused attention's, "
        "forward and backward, in float32 and bfloat16, the "
        "bandwidth of pointwise "
        "kernels, reductions and copies, the kernel launch overhead, the "
        "host link in both directions (pinned memory) and how much of a "
        "copy hides behind a GEMM on another stream. Every kernel but the "
        "bf16 GEMMs is the executor's own, run on a one-node graph planned "
        "and lowered as `memplan validate` does. Writes the profile JSON "
        "(docs/cost-model.md), which --device FILE reads; progress lines "
        "go to stderr. Runs in memplan-validate, as validate does.",
        "Built without CUDA it exits 3 before measuring anything.",
        "memplan calibrate --device h200 -o h200.json\n"
        "memplan validate examples/mlp.onnx --device h200.json --json\n"},
    [CLI_CMD_SERVE] = {"serve", "CONFIG.json", 1, 1,
        "serving an LLM: KV cache blocks, concurrency and memory breakdown",
        "For a decoder-only transformer (its Hugging Face config.json: "
        "llama, mistral, qwen2, gpt2, opt, mixtral-style MoE), works out "
        "how one GPU's memory (--gpu-util of it) divides between the "
        "weights at --weights precision, the forward peak of a prefill "
        "chunk (--max-batched-tokens) and of a decode step (--max-seqs), "
        "each planned from the decoder graph memplan builds for the config "
        "(logits in fp32 and the sampler's buffers included), the CUDA "
        "graph pool, a runtime reserve, and the KV cache: bytes per token, "
        "blocks, the sequences of --max-model-len that fit and the longest "
        "context each of --max-seqs can have, and what binds. Then the "
        "fragmentation of the cache (paged against contiguous) over the "
        "request lengths, prefix sharing, and the same plan on every "
        "builtin device (docs/serving.md).",
        NULL,
        "memplan serve examples/llm/llama-3-8b.json --device h200\n"
        "memplan serve examples/llm/llama-3-70b.json --weights int4 --tp 2 "
        "--max-model-len 8192\n"
        "memplan serve examples/llm/llama-3-8b.json --lengths "
        "lognormal:1000:1 --shared-prefix 512 --json\n"},
};

/* ---- variants ------------------------------------------------------------- */
static const cli_variant *variant(const cli_option *o, int cmd)
{
    for (const cli_variant *v = o->variants; v && v->cmds; v++)
        if (v->cmds & (1u << cmd))
            return v;
    return NULL;
}

const char *cli_option_def(const cli_option *o, int cmd)
{
    const cli_variant *v = variant(o, cmd);
    return v && v->def ? v->def : o->def;
}

const char *cli_option_note(const cli_option *o, int cmd)
{
    const cli_variant *v = variant(o, cmd);
    return v && v->note ? v->note : o->note;
}

const char *cli_option_help(const cli_option *o, int cmd)
{
    const cli_variant *v = variant(o, cmd);
    return v && v->help ? v->help : o->help;
}
