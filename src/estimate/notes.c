/* The notes of an estimate (docs/estimator.md): how the summary was read where the
 * print leaves it open, as `carma estimate` prints them ("note: ...", JSON "notes") and
 * `carma submit` repeats them. Text only; no I/O. */
#include "estimate/estimate.h"

#include <math.h>
#include <stdio.h>

/* Into out: why a table's printed trainable count was not used (m->trainable_unplaced). */
static void trainable_note(const struct est_model *m, char *out, size_t cap)
{
    char why[160];
    if (m->trainable_unplaced == EST_TRAIN_ABOVE)
        snprintf(why, sizeof why, "more than its rows not marked frozen hold");
    else if (m->trainable_unplaced == EST_TRAIN_ZERO)
        snprintf(why, sizeof why, "nothing trains: a frozen model printed without its head?");
    else
        snprintf(why, sizeof why, "no frozen prefix of its rows holds the other %llu",
                 (unsigned long long)(m->params > m->trainable_printed
                                          ? m->params - m->trainable_printed
                                          : 0));
    snprintf(out, cap,
             "the table prints 'Trainable params: %llu' (line %zu), which carma cannot place "
             "on its rows (%s): %llu parameters are counted as trained (the safe side: "
             "gradients and optimizer state for the frozen ones too)",
             (unsigned long long)m->trainable_printed, m->trainable_line, why,
             (unsigned long long)(m->params - m->frozen));
}


/* Into out: a mixture-of-experts print's routing, when --experts-per-token (k) is not
 * given: every token counted through every expert. */
static void moe_note(const struct est_model *m, char *out, size_t cap)
{
    char e[48];
    if (m->moe_experts_min == m->moe_experts_max)
        snprintf(e, sizeof e, "%u experts", m->moe_experts_min);
    else
        snprintf(e, sizeof e, "%u to %u experts", m->moe_experts_min, m->moe_experts_max);
    snprintf(out, cap,
             "the print has %s per mixture-of-experts block (%llu block%s, from line %zu); "
             "the router's top-k is not printed, so every token is counted through every "
             "expert (the safe side: their activations up to E / k times too many). Give "
             "--experts-per-token K, the experts each token is routed to (num_experts_per_tok "
             "in the model's config)",
             e, (unsigned long long)m->moe_blocks, m->moe_blocks == 1 ? "" : "s", m->moe_line);
}


size_t est_notes(const struct est_model *m, const struct est_opts *o, const struct est_result *r,
                 char notes[EST_NOTES][EST_NOTE_MAX])
{
    size_t n = 0;
    const uint32_t k = o->experts_per_token;
    const enum est_attention a = o->attention;
    if (a == EST_ATTN_SDPA && m->no_position_line)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "the print shows no position encoding but the token table (no position "
                 "table, no rotary or positional module): attention that builds positions into "
                 "its scores in Python (ALiBi, as BLOOM's and MPT's; GPT-J's and CodeGen's "
                 "sinusoidal buffers) has no SDPA path and keeps its probabilities, batch x "
                 "heads x seq x seq a layer (from line %zu): if this model is one, give "
                 "--attention eager. A model keeping RoPE in buffers (litgpt, torchtitan) "
                 "runs SDPA: then --attention sdpa is right",
                 m->no_position_line);
    if (m->single_layer_line)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "the print has one attention layer (line %zu), the only layer of its list: "
                 "counted once. A model that runs a layer several times (as ALBERT does, whose "
                 "list of one layer group is read so) keeps its activations for each run, "
                 "which no print shows: the estimate is then low; a torchinfo table lists "
                 "every call",
                 m->single_layer_line);
    if (m->scores_bias_line)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "the attention adds a learned position bias to its scores (the table at line "
                 "%zu, as T5's relative_attention_bias): they are computed explicitly and the "
                 "probabilities counted, whatever --attention says",
                 m->scores_bias_line);
    if (r->math_attention)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "grouped-query attention under SDPA, in fp32 or on a GPU older than compute "
                 "capability 8.0: no fused kernel takes it (FlashAttention wants fp16 or bf16 "
                 "on 8.0 or newer, the memory-efficient kernel no grouped keys), so PyTorch "
                 "runs its math kernel, which keeps each layer's probabilities (counted)%s",
                 o->cc || o->precision == EST_PREC_FP32
                     ? ""
                     : "; the GPU's compute capability is not known here (no GPU kind), so "
                       "it is taken as below 8.0, the safe side: on an A100 or newer "
                       "FlashAttention keeps none");
    if (m->trainable_unplaced)
        trainable_note(m, notes[n++], EST_NOTE_MAX);
    if (m->quant_params)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "%llu parameters in quantized layers (bitsandbytes, HQQ, AWQ; from line %zu) "
                 "are read as frozen, at their storage bits: no optimizer trains a packed "
                 "weight; the other %llu are counted as trained. A QLoRA job trains "
                 "adapters: give the print after peft's get_peft_model",
                 (unsigned long long)m->quant_params, m->quant_line,
                 (unsigned long long)(m->params - m->frozen));
    if (m->tied_head_bare)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "the output head at line %zu prints no size (a class of its own): read as a "
                 "linear layer from %llu features to the %llu rows of the token table (line "
                 "%zu), with its weight, its logits and their loss",
                 m->tied_head_bare, (unsigned long long)m->tied_head_width,
                 (unsigned long long)m->tied_head_rows, m->tied_head_line);
    else if (m->tied_head_line) {
        char tail[192];
        if (m->head_tied)
            snprintf(tail, sizeof tail, "its weight is the table's (--tied-head)");
        else
            snprintf(tail, sizeof tail,
                     "its weight is counted as a separate %llu x %llu linear layer, as a "
                     "printed tied head's is (the safe side; --tied-head counts it once)",
                     (unsigned long long)m->tied_head_width, (unsigned long long)m->tied_head_rows);
        snprintf(notes[n++], EST_NOTE_MAX,
                 "no layer maps to the %llu rows of the token table (line %zu) and the print "
                 "ends with a norm: an output head tied to the table in forward (as "
                 "F.linear(x, wte.weight)) is assumed, with its %llu-wide logits and loss; %s",
                 (unsigned long long)m->tied_head_rows, m->tied_head_line,
                 (unsigned long long)m->tied_head_rows, tail);
    }
    if (m->head_tied && !m->tied_head_line) /* (an assumed head's note says it above) */
        snprintf(notes[n++], EST_NOTE_MAX,
                 "the output head shares the weight of the token table at line %zu "
                 "(--tied-head): %llu x %llu parameters counted once",
                 m->head_table_line, (unsigned long long)m->head_table_rows,
                 (unsigned long long)m->head_table_width);
    else if (m->head_table_line && !m->tied_head_line)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "an output head maps to the %llu rows of the token table at line %zu: the "
                 "print cannot show whether they share one weight (transformers' "
                 "tie_word_embeddings, on by default; Llama-, Mistral-, GPT-J- and "
                 "Pythia-style configurations set it off), so its %llu x %llu weight is "
                 "counted apart (the safe side); --tied-head counts it once",
                 (unsigned long long)m->head_table_rows, m->head_table_line,
                 (unsigned long long)m->head_table_rows, (unsigned long long)m->head_table_width);
    if (m->join_line)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "line %zu reads %llu channels, which neither the newest tensor nor a "
                 "block's input has, nor a concatenation of the newest tensor with an "
                 "earlier one: read as a join (or a read of an older tensor) the print does "
                 "not show, at the newest tensor's size, %llux%llu%s; if the job runs it "
                 "larger (an F.interpolate in forward, as in a U-Net's or an FPN's decoder), "
                 "the estimate is low: give a torchinfo table (torchinfo.summary(model, "
                 "input_data=..., depth=10)), which lists every shape",
                 m->join_line, (unsigned long long)m->join_channels,
                 (unsigned long long)m->join_h, (unsigned long long)m->join_w,
                 m->join_count > 1 ? " (and other such leaves)" : "");
    if (m->window_line)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "windowed attention (line %zu) over the grid of patches, merged between "
                 "stages (Swin): read with %d x %d windows and heads of %d channels, Swin's at "
                 "224 x 224 (Swin V2's 8 x 8 at 256 x 256 keeps about as many "
                 "probabilities), which the print does not show; a larger window (Swin at "
                 "384: 12 x 12; Swin V2's 16 x 16) keeps more, and the estimate is then "
                 "low: give a torchinfo table",
                 m->window_line, EST_WINDOW, EST_WINDOW, EST_WINDOW_HEAD);
    if (m->positions_line) {
        char how[192];
        if (m->positions_window)
            snprintf(how, sizeof how,
                     "within %u x %u partitions (MaxViT's windows and grid cells, Twins' local "
                     "groups, DaViT's windows, at every size they were published in)",
                     m->positions_window, m->positions_window);
        else if (m->positions_unfold)
            snprintf(how, sizeof how,
                     "as MobileViT's over %u x %u patches, every published MobileViT's size "
                     "(every position attends to %llu, its place in each patch)",
                     m->positions_unfold, m->positions_unfold,
                     (unsigned long long)m->positions_keys);
        else if (m->positions_sr)
            snprintf(how, sizeof how,
                     "as global attention over its keys and values reduced by a convolution "
                     "of stride %u (every position attends to %llu; later stages' strides as "
                     "printed)",
                     m->positions_sr, (unsigned long long)m->positions_keys);
        else
            snprintf(how, sizeof how,
                     "as global attention (every position attends to every other)");
        snprintf(notes[n++], EST_NOTE_MAX,
                 "attention (line %zu) over the %llu positions of a convolutional network's "
                 "tensor and those of its later stages, read %s with heads of %d channels, "
                 "which the print does not show; %s, heads narrower than %d channels more",
                 m->positions_line, (unsigned long long)m->positions_hw, how, EST_WINDOW_HEAD,
                 m->positions_window   ? "larger partitions keep more probabilities (the "
                                         "estimate is then low)"
                 : m->positions_unfold ? "larger patches keep fewer probabilities (the estimate "
                                         "is then high)"
                                       : "attention within windows or blocks of the tensor "
                                         "keeps fewer probabilities (the estimate is then high)",
                 EST_WINDOW_HEAD);
    }
    if (m->slide_line)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "attention beside global projections (line %zu: query_global, key_global, "
                 "value_global, as Longformer's) is read over a sliding window, computed in "
                 "Python under any --attention: each token attends to %d keys "
                 "(attention_window 1024, LED's; Longformer's 512 keeps half, the estimate is "
                 "then high), which the print does not show; global tokens and a sequence "
                 "padded to a multiple of the window (Longformer pads it) keep more",
                 m->slide_line, EST_SLIDE_KEYS);
    if (m->shared_line && m->shared_layer_runs)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "the layer group at line %zu holds one layer, which the model runs %u "
                 "time%s (--shared-layer-runs) with the same parameters (ALBERT's), each run "
                 "keeping its activations",
                 m->shared_line, m->shared_layer_runs, m->shared_layer_runs == 1 ? "" : "s");
    else if (m->shared_line)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "the layer group at line %zu holds one layer, which the model runs "
                 "num_hidden_layers times with the same parameters (ALBERT's), each run "
                 "keeping its activations; the print does not show how many: %d assumed, "
                 "the most of any released ALBERT (large, xlarge; base and xxlarge run 12: "
                 "the estimate is then high); --shared-layer-runs N gives num_hidden_layers",
                 m->shared_line, EST_SHARED_RUNS);
    if (m->channels_line)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "attention over channels (line %zu, %s projecting its C channels to 3C%s): "
                 "its linear layers run per position, and each head's "
                 "channels attend to each other, heads of %d channels assumed (the print does not "
                 "show them): "
                 "heads x (C / heads)^2 probabilities a sample, a small part of one feature map",
                 m->channels_line,
                 m->channels_l2qk ? "XCiT's XCA" : "a ChannelAttention, as DaViT's,",
                 m->channels_l2qk ? ", which also keeps its queries and keys L2-normalised" : "",
                 EST_WINDOW_HEAD);
    if (m->subsample_line)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "the query subsampling at line %zu, which prints no stride, is read as taking "
                 "every second position of each side (LeViT's in every published size): its "
                 "attention's queries and output, and the stages after it, at half the side; "
                 "a larger stride keeps fewer positions (the estimate is then high)",
                 m->subsample_line);
    if (m->bare_pool_line)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "the pooling at line %zu prints no window (a class of its own, as "
                 "torchvision's LastLevelMaxPool()): read as keeping its input's size, the "
                 "most a pooling makes (the safe side)",
                 m->bare_pool_line);
    if (m->profiler_line && fabs((double)m->params - m->profiler_params) > m->profiler_tol)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "the %s statistics at line %zu give the model %.0f parameters (to their "
                 "printed precision), its layers %llu: a frozen part (the profiler counts "
                 "trained parameters only) or parameters the print does not show (an "
                 "nn.Parameter outside a layer, as a class token or a position table, not "
                 "counted here); every parameter of the layers is counted as trained",
                 m->profiler == EST_PROF_DEEPSPEED ? "DeepSpeed flops profiler's" : "ptflops",
                 m->profiler_line, m->profiler_params, (unsigned long long)m->params);
    if (m->moe_gate_line)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "the mixture-of-experts router at line %zu prints no size: it is read as a "
                 "linear layer from the experts' input width to one score per expert, "
                 "without bias (a weight of E x width, as DeepSeek's MoEGate holds it)",
                 m->moe_gate_line);
    if (m->moe_blocks && !k)
        moe_note(m, notes[n++], EST_NOTE_MAX);
    /* frozen parameters stored at the precision's 16 bits (a PEFT model's base) */
    double half = 0;
    for (size_t i = 0; o->precision != EST_PREC_FP32 && i < m->n; i++) {
        const struct est_layer *l = &m->layers[i];
        if (!l->wbits && !(l->flags & EST_LF_TIED))
            half += (double)l->frozen * l->count;
    }
    if (half > 0)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "the %.0f frozen parameters are counted in 16 bits, as a base loaded with "
                 "torch_dtype=torch.float16 or bfloat16 holds them; a base loaded in fp32 and "
                 "trained under autocast holds %.0f MiB more, which the estimate leaves out",
                 half, half * 2 / 1048576.0);
    if (m->dora_line)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "DoRA adapters (peft's use_dora: the lora_magnitude_vector entry at line %zu) "
                 "are read as plain LoRA, and the estimate is low: not counted are each adapted "
                 "layer's trainable magnitude vector (one per output), the base layer's output "
                 "it keeps for that vector's gradient (one more batch x seq x out activation per "
                 "adapted layer), and the out x in weight it builds every forward (from a 4-bit "
                 "base, dequantized). Measure a run's peak and give 'carma submit --mem SIZE'",
                 m->dora_line);
    if (m->params_unplaced)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "'Total params' (line %zu) holds %llu parameters that no row or container of "
                 "the table shows (parameters a module holds outside its layers, as an older "
                 "torchinfo prints them): counted as parameters; were they rows left out of "
                 "the paste, their activations are missing and the estimate is low",
                 m->params_unplaced_line, (unsigned long long)m->params_unplaced);
    if (m->unsized_line)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "%s at line %zu is a layer carma does not size: read as holding no parameters "
                 "and keeping no tensor of its own; if it holds parameters, the estimate is "
                 "low: give a print with each layer's count (', N params'), or a torchinfo "
                 "table",
                 m->unsized_cls, m->unsized_line);
    if (m->table_batch && m->table_batch != o->batch)
        snprintf(notes[n++], EST_NOTE_MAX,
                 "the table was printed at batch %llu; its activations are scaled to batch %u, "
                 "the job's batch per GPU (the micro-batch under gradient accumulation)",
                 (unsigned long long)m->table_batch, o->batch);
    return n;
}

