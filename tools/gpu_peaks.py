#!/usr/bin/env python3
"""Measures on a real GPU the peak memory of training steps for torchvision and timm CNNs
and Hugging Face transformers built from their configurations (no weights are fetched;
the _lora runs add peft's LoRA adapters on q and v over a base kept in fp32, or cast to
bfloat16 first),
and writes what carma needs to estimate the same runs: each model's print(model)
(NAME.txt) and index.csv (run, summary, batch, seq_len, image_size, precision,
optimizer, checkpointing, attention, dtype, peak_mib, reserved_mib, allocated_mib, context_mib,
params, trained_params, status).

peak_mib is what nvidia-smi shows for the process at its largest (NVML's per-process
used memory, sampled every 5 ms by a thread and read once more after the last
step; PyTorch's caching allocator keeps what it reserved, so the last reading is the
peak of the reserved memory plus the CUDA context). reserved_mib and allocated_mib
are torch.cuda.max_memory_reserved/allocated. The floor run is a process that only
initialises CUDA, cuBLAS and cuDNN (one small matrix product and one convolution
forward and backward): its peak is the environment's floor (carma estimate --floor).

Each run is its own process (a fresh context and allocator); several run at once
while the sum of their memory hints stays under the GPU's memory. A run trains four
steps: forward, loss, backward, AdamW step (PyTorch's default foreach
implementation), zero_grad(set_to_none=True). amp is autocast float16 with a
GradScaler, bf16 autocast bfloat16. Inputs are random.

--sdpa-probe prints the memory one scaled_dot_product_attention forward and backward
takes, fp32 and fp16, with grouped keys (enable_gqa) and without: which kernel PyTorch
picks shows in whether the probabilities are kept.

Usage: gpu_peaks.py OUTDIR [RUN...]         (all runs, or the named ones)
       gpu_peaks.py --one RUN OUTDIR        (one run, in this process)
       gpu_peaks.py --sdpa-probe"""
import csv
import json
import os
import subprocess
import sys
import threading
import time

STEPS = 4

# name, builder, batch, seq_len, image_size, precision, checkpointing, memory hint (GiB)
RUNS = [
    ("floor", "floor", 1, 0, 0, "fp32", 0, 1),
    ("resnet18_b64", "tv:resnet18", 64, 0, 224, "fp32", 0, 6),
    ("resnet18_b256", "tv:resnet18", 256, 0, 224, "fp32", 0, 16),
    ("resnet50_b32", "tv:resnet50", 32, 0, 224, "fp32", 0, 8),
    ("resnet50_b64", "tv:resnet50", 64, 0, 224, "fp32", 0, 14),
    ("resnet50_b128", "tv:resnet50", 128, 0, 224, "fp32", 0, 26),
    ("resnet50_b64_amp", "tv:resnet50", 64, 0, 224, "amp", 0, 10),
    ("vgg16_b32", "tv:vgg16", 32, 0, 224, "fp32", 0, 10),
    ("vgg16_b64_amp", "tv:vgg16", 64, 0, 224, "amp", 0, 12),
    ("mobilenet_v2_b128", "tv:mobilenet_v2", 128, 0, 224, "fp32", 0, 16),
    ("efficientnet_b0_b64", "tv:efficientnet_b0", 64, 0, 224, "fp32", 0, 12),
    ("densenet121_b64", "tv:densenet121", 64, 0, 224, "fp32", 0, 14),
    ("convnext_tiny_b64", "tv:convnext_tiny", 64, 0, 224, "fp32", 0, 16),
    ("regnet_y_400mf_b128", "tv:regnet_y_400mf", 128, 0, 224, "fp32", 0, 14),
    ("inception_v3_b32", "tv:inception_v3", 32, 0, 299, "fp32", 0, 10),
    ("vit_b_16_b32", "tv:vit_b_16", 32, 0, 224, "fp32", 0, 14),
    ("vit_b_16_b64_bf16", "tv:vit_b_16", 64, 0, 224, "bf16", 0, 16),
    ("swin_t_b32", "tv:swin_t", 32, 0, 224, "fp32", 0, 12),
    ("bert_base_mlm_b16_s128", "hf:bert", 16, 128, 0, "fp32", 0, 6),
    ("bert_base_mlm_b32_s512", "hf:bert", 32, 512, 0, "fp32", 0, 26),
    ("bert_base_mlm_b16_s512_amp", "hf:bert", 16, 512, 0, "amp", 0, 12),
    ("roberta_base_mlm_b16_s256", "hf:roberta", 16, 256, 0, "fp32", 0, 12),
    ("distilbert_mlm_b32_s256", "hf:distilbert", 32, 256, 0, "fp32", 0, 12),
    ("gpt2_b8_s1024", "hf:gpt2", 8, 1024, 0, "fp32", 0, 20),
    ("gpt2_b16_s512_bf16", "hf:gpt2", 16, 512, 0, "bf16", 0, 16),
    ("opt125m_b8_s512", "hf:opt", 8, 512, 0, "fp32", 0, 10),
    ("t5_small_b16_s512", "hf:t5", 16, 512, 0, "fp32", 0, 14),
    ("llama_small_b4_s512", "hf:llama", 4, 512, 0, "fp32", 0, 10),
    ("llama_small_b8_s1024_bf16", "hf:llama", 8, 1024, 0, "bf16", 0, 20),
    ("llama_small_b8_s1024_bf16_ckpt", "hf:llama", 8, 1024, 0, "bf16", 1, 12),
    ("llama_small_lora_b8_s1024_bf16", "hf:llama-lora", 8, 1024, 0, "bf16", 0, 14),
    ("qwen2_05b_b4_s512_bf16", "hf:qwen2", 4, 512, 0, "bf16", 0, 24),
    ("qwen2_05b_b2_s512", "hf:qwen2", 2, 512, 0, "fp32", 0, 24),
    ("llama_small_b2_s1024", "hf:llama", 2, 1024, 0, "fp32", 0, 10),
    ("llama_small_b8_s1024_amp", "hf:llama", 8, 1024, 0, "amp", 0, 20),
    ("convnext_tiny_b32", "tv:convnext_tiny", 32, 0, 224, "fp32", 0, 10),
    ("vit_hf_base_b32", "hf:vit", 32, 0, 224, "fp32", 0, 14),
    ("hrnet_w32_b32", "timm:hrnet_w32", 32, 0, 224, "fp32", 0, 16),
    ("cspdarknet53_b32", "timm:cspdarknet53", 32, 0, 256, "fp32", 0, 14),
    ("ghostnet_100_b128", "timm:ghostnet_100", 128, 0, 224, "fp32", 0, 12),
    ("vit_small_timm_b64", "timm:vit_small_patch16_224", 64, 0, 224, "fp32", 0, 10),
    ("t5_small_lora_b16_s512", "hf:t5-lora", 16, 512, 0, "fp32", 0, 10),
    ("t5_small_lora_b16_s512_amp", "hf:t5-lora", 16, 512, 0, "amp", 0, 8),
    ("bart_large_b8_s512", "hf:bart", 8, 512, 0, "fp32", 0, 24),
    ("qwen2_05b_lora_b4_s512_amp", "hf:qwen2-lora", 4, 512, 0, "amp", 0, 12),
    ("qwen2_05b_lora_b4_s512_bf16", "hf:qwen2-lora-bf16base", 4, 512, 0, "bf16", 0, 8),
    ("resnest50d_b32", "timm:resnest50d", 32, 0, 224, "fp32", 0, 10),
    ("res2net50_b32", "timm:res2net50_26w_4s", 32, 0, 224, "fp32", 0, 10),
    ("dla34_b64", "timm:dla34", 64, 0, 224, "fp32", 0, 10),
    ("dpn68_b32", "timm:dpn68", 32, 0, 224, "fp32", 0, 10),
    ("seresnext50_b32", "timm:seresnext50_32x4d", 32, 0, 224, "fp32", 0, 10),
    ("repvgg_a2_b64", "timm:repvgg_a2", 64, 0, 224, "fp32", 0, 10),
    ("mobilenetv3_large_b128", "timm:mobilenetv3_large_100", 128, 0, 224, "fp32", 0, 10),
    ("efficientnetv2_rw_s_b32", "timm:efficientnetv2_rw_s", 32, 0, 288, "fp32", 0, 12),
    ("cspresnet50_b32", "timm:cspresnet50", 32, 0, 256, "fp32", 0, 10),
    ("darknet53_b32", "timm:darknet53", 32, 0, 256, "fp32", 0, 12),
    ("nf_resnet50_b32", "timm:nf_resnet50", 32, 0, 224, "fp32", 0, 10),
    ("mixnet_m_b64", "timm:mixnet_m", 64, 0, 224, "fp32", 0, 10),
    ("poolformer_s12_b64", "timm:poolformer_s12", 64, 0, 224, "fp32", 0, 10),
    ("mobilevit_s_b64", "timm:mobilevit_s", 64, 0, 256, "fp32", 0, 12),
    ("beit_base_b32", "timm:beit_base_patch16_224", 32, 0, 224, "fp32", 0, 12),
    ("pvt_v2_b1_b64", "timm:pvt_v2_b1", 64, 0, 224, "fp32", 0, 10),
    ("deberta_v3_base_b8_s512", "hf:deberta_v3", 8, 512, 0, "fp32", 0, 16),
    ("albert_base_b16_s512", "hf:albert", 16, 512, 0, "fp32", 0, 16),
    ("electra_small_b32_s512", "hf:electra", 32, 512, 0, "fp32", 0, 12),
    ("longformer_base_b2_s4096", "hf:longformer", 2, 4096, 0, "fp32", 0, 24),
    ("pythia160m_b8_s1024", "hf:gpt_neox", 8, 1024, 0, "fp32", 0, 20),
    ("olmo2_small_b8_s1024_bf16", "hf:olmo2", 8, 1024, 0, "bf16", 0, 16),
    ("gemma_small_b4_s512_bf16", "hf:gemma", 4, 512, 0, "bf16", 0, 16),
    ("hf_resnet50_b32", "hfv:resnet", 32, 0, 224, "fp32", 0, 10),
    ("hf_convnext_tiny_b32", "hfv:convnext", 32, 0, 224, "fp32", 0, 10),
    ("hf_convnext_tiny_b64", "hfv:convnext", 64, 0, 224, "fp32", 0, 16),
    ("hf_convnextv2_tiny_b32", "hfv:convnextv2", 32, 0, 224, "fp32", 0, 10),
    ("hf_regnet_y_040_b32", "hfv:regnet", 32, 0, 224, "fp32", 0, 10),
    ("hf_regnet_y_040_b64", "hfv:regnet", 64, 0, 224, "fp32", 0, 16),
    ("hf_mobilenet_v2_b128", "hfv:mobilenet_v2", 128, 0, 224, "fp32", 0, 16),
    ("hf_efficientnet_b0_b64", "hfv:efficientnet", 64, 0, 224, "fp32", 0, 12),
    ("hf_poolformer_s12_b64", "hfv:poolformer", 64, 0, 224, "fp32", 0, 10),
    ("hf_dinov2_base_b32", "hfv:dinov2", 32, 0, 224, "fp32", 0, 12),
    ("hf_levit_128s_b64", "hfv:levit", 64, 0, 224, "fp32", 0, 8),
    ("hf_segformer_b0_b64", "hfv:segformer", 64, 0, 224, "fp32", 0, 10),
    ("convnext_tiny_timm_b32", "timm:convnext_tiny", 32, 0, 224, "fp32", 0, 10),
    ("convnextv2_tiny_timm_b32", "timm:convnextv2_tiny", 32, 0, 224, "fp32", 0, 10),
    ("regnety_040_timm_b32", "timm:regnety_040", 32, 0, 224, "fp32", 0, 10),
    ("resnet50d_timm_b32", "timm:resnet50d", 32, 0, 224, "fp32", 0, 10),
    ("efficientformer_l1_b64", "timm:efficientformer_l1", 64, 0, 224, "fp32", 0, 10),
    ("resnet101_b64", "tv:resnet101", 64, 0, 224, "fp32", 0, 16),
    ("wide_resnet50_2_b32", "tv:wide_resnet50_2", 32, 0, 224, "fp32", 0, 12),
    ("resnext50_32x4d_b64", "tv:resnext50_32x4d", 64, 0, 224, "fp32", 0, 16),
    ("shufflenet_v2_x1_0_b256", "tv:shufflenet_v2_x1_0", 256, 0, 224, "fp32", 0, 12),
    ("mnasnet1_0_b128", "tv:mnasnet1_0", 128, 0, 224, "fp32", 0, 14),
    ("efficientnet_b3_b32", "tv:efficientnet_b3", 32, 0, 300, "fp32", 0, 12),
    ("regnet_x_1_6gf_b64", "tv:regnet_x_1_6gf", 64, 0, 224, "fp32", 0, 10),
    ("convnext_small_b32", "tv:convnext_small", 32, 0, 224, "fp32", 0, 12),
    ("mobilenet_v3_large_b128", "tv:mobilenet_v3_large", 128, 0, 224, "fp32", 0, 10),
    ("vgg19_bn_b32", "tv:vgg19_bn", 32, 0, 224, "fp32", 0, 12),
    ("squeezenet1_1_b128", "tv:squeezenet1_1", 128, 0, 224, "fp32", 0, 8),
    ("inception_v4_timm_b32", "timm:inception_v4", 32, 0, 299, "fp32", 0, 12),
    ("xception65_timm_b32", "timm:xception65", 32, 0, 299, "fp32", 0, 14),
    ("hf_swin_tiny_b32", "hfv:swin", 32, 0, 224, "fp32", 0, 10),
    ("hf_beit_base_b32", "hfv:beit", 32, 0, 224, "fp32", 0, 12),
    ("hf_deit_base_b32", "hfv:deit", 32, 0, 224, "fp32", 0, 12),
    ("hf_bit_b32", "hfv:bit", 32, 0, 224, "fp32", 0, 10),
    ("hf_mobilevit_s_b64", "hfv:mobilevit", 64, 0, 256, "fp32", 0, 12),
    ("mistral_small_b4_s1024", "hf:mistral", 4, 1024, 0, "fp32", 0, 14),
    ("phi_small_b4_s1024", "hf:phi", 4, 1024, 0, "fp32", 0, 14),
    ("modernbert_base_b16_s512", "hf:modernbert", 16, 512, 0, "fp32", 0, 14),
    ("xlm_roberta_base_b16_s256", "hf:xlm_roberta", 16, 256, 0, "fp32", 0, 16),
    ("mpnet_base_b16_s256", "hf:mpnet", 16, 256, 0, "fp32", 0, 10),
    ("qwen3_small_b4_s1024_bf16", "hf:qwen3", 4, 1024, 0, "bf16", 0, 12),
    ("bert_large_b8_s512", "hf:bert_large", 8, 512, 0, "fp32", 0, 20),
    ("gpt2_medium_b4_s1024", "hf:gpt2_medium", 4, 1024, 0, "fp32", 0, 20),
    ("swin_t_b64", "tv:swin_t", 64, 0, 224, "fp32", 0, 16),
    ("swin_s_b32", "tv:swin_s", 32, 0, 224, "fp32", 0, 14),
    ("swin_b_b32", "tv:swin_b", 32, 0, 224, "fp32", 0, 18),
    ("swin_v2_t_b32", "tv:swin_v2_t", 32, 0, 256, "fp32", 0, 14),
    ("hf_swin_base_b32", "hfv:swin_base", 32, 0, 224, "fp32", 0, 18),
    ("swin_tiny_timm_b32", "timm:swin_tiny_patch4_window7_224", 32, 0, 224, "fp32", 0, 12),
    ("swin_base_384_timm_b8", "timm:swin_base_patch4_window12_384", 8, 0, 384, "fp32", 0, 14),
    ("googlenet_b64", "tv:googlenet", 64, 0, 224, "fp32", 0, 10),
    ("maxvit_t_b16", "tv:maxvit_t", 16, 0, 224, "fp32", 0, 14),
    ("regnet_y_16gf_b16", "tv:regnet_y_16gf", 16, 0, 224, "fp32", 0, 12),
    ("efficientnet_v2_s_b16", "tv:efficientnet_v2_s", 16, 0, 384, "fp32", 0, 14),
    ("convnext_base_b16", "tv:convnext_base", 16, 0, 224, "fp32", 0, 12),
    ("vit_l_16_b8", "tv:vit_l_16", 8, 0, 224, "fp32", 0, 16),
    ("deit_small_timm_b64", "timm:deit_small_patch16_224", 64, 0, 224, "fp32", 0, 10),
    ("cait_xxs24_timm_b32", "timm:cait_xxs24_224", 32, 0, 224, "fp32", 0, 10),
    ("xcit_tiny12_timm_b32", "timm:xcit_tiny_12_p16_224", 32, 0, 224, "fp32", 0, 10),
    ("mixer_b16_timm_b32", "timm:mixer_b16_224", 32, 0, 224, "fp32", 0, 14),
    ("resmlp_12_timm_b64", "timm:resmlp_12_224", 64, 0, 224, "fp32", 0, 10),
    ("coatnet_0_timm_b32", "timm:coatnet_0_rw_224", 32, 0, 224, "fp32", 0, 14),
    ("efficientnet_b4_timm_b16", "timm:efficientnet_b4", 16, 0, 320, "fp32", 0, 12),
    ("nfnet_f0_timm_b16", "timm:dm_nfnet_f0", 16, 0, 256, "fp32", 0, 14),
    ("rexnet_100_timm_b64", "timm:rexnet_100", 64, 0, 224, "fp32", 0, 12),
    ("vovnet39a_timm_b32", "timm:vovnet39a", 32, 0, 224, "fp32", 0, 12),
    ("edgenext_small_timm_b64", "timm:edgenext_small", 64, 0, 256, "fp32", 0, 12),
    ("eva02_tiny_timm_b64", "timm:eva02_tiny_patch14_224", 64, 0, 224, "fp32", 0, 10),
    ("fastvit_t8_timm_b64", "timm:fastvit_t8", 64, 0, 256, "fp32", 0, 12),
    ("mixtral_small_b4_s512", "hf:mixtral", 4, 512, 0, "fp32", 0, 12),
    ("falcon_small_b4_s1024", "hf:falcon", 4, 1024, 0, "fp32", 0, 14),
    ("bloom_small_b4_s512", "hf:bloom", 4, 512, 0, "fp32", 0, 16),
    ("t5_v11_small_b8_s512", "hf:t5_v11", 8, 512, 0, "fp32", 0, 14),
    ("gpt_bigcode_b4_s1024", "hf:gpt_bigcode", 4, 1024, 0, "fp32", 0, 12),
    ("phi3_small_b4_s1024", "hf:phi3", 4, 1024, 0, "fp32", 0, 12),
    ("gemma2_small_b4_s512_bf16", "hf:gemma2", 4, 512, 0, "bf16", 0, 16),
    ("inception_resnet_v2_timm_b32", "timm:inception_resnet_v2", 32, 0, 299, "fp32", 0, 14),
    ("resnetv2_50x1_bit_timm_b32", "timm:resnetv2_50x1_bit", 32, 0, 224, "fp32", 0, 12),
    ("regnetz_d8_timm_b32", "timm:regnetz_d8", 32, 0, 256, "fp32", 0, 14),
    ("efficientvit_b0_timm_b64", "timm:efficientvit_b0", 64, 0, 224, "fp32", 0, 10),
    ("ghostnetv2_100_timm_b64", "timm:ghostnetv2_100", 64, 0, 224, "fp32", 0, 10),
    ("repvgg_b0_timm_b64", "timm:repvgg_b0", 64, 0, 224, "fp32", 0, 12),
    ("hgnet_tiny_timm_b64", "timm:hgnet_tiny", 64, 0, 224, "fp32", 0, 12),
    ("tresnet_m_timm_b32", "timm:tresnet_m", 32, 0, 224, "fp32", 0, 12),
    ("convit_tiny_timm_b64", "timm:convit_tiny", 64, 0, 224, "fp32", 0, 10),
    ("pit_ti_timm_b64", "timm:pit_ti_224", 64, 0, 224, "fp32", 0, 10),
    ("tnt_s_timm_b32", "timm:tnt_s_patch16_224", 32, 0, 224, "fp32", 0, 14),
    ("twins_svt_small_timm_b32", "timm:twins_svt_small", 32, 0, 224, "fp32", 0, 12),
    ("crossvit_9_timm_b64", "timm:crossvit_9_240", 64, 0, 240, "fp32", 0, 12),
    ("volo_d1_timm_b32", "timm:volo_d1_224", 32, 0, 224, "fp32", 0, 14),
    ("mobilevitv2_100_timm_b64", "timm:mobilevitv2_100", 64, 0, 256, "fp32", 0, 14),
    ("opt350_small_b4_s1024", "hf:opt350", 4, 1024, 0, "fp32", 0, 14),
    ("mobilebert_b16_s256", "hf:mobilebert", 16, 256, 0, "fp32", 0, 12),
    ("funnel_b8_s512", "hf:funnel", 8, 512, 0, "fp32", 0, 14),
    ("pegasus_small_b8_s512", "hf:pegasus", 8, 512, 0, "fp32", 0, 14),
    ("marian_small_b8_s256", "hf:marian", 8, 256, 0, "fp32", 0, 12),
    ("bigbird_b4_s1024", "hf:bigbird", 4, 1024, 0, "fp32", 0, 16),
    ("convbert_b8_s512", "hf:convbert", 8, 512, 0, "fp32", 0, 14),
    ("electra_base_b8_s512", "hf:electra_base", 8, 512, 0, "fp32", 0, 14),
    ("resnet152_timm_b32", "timm:resnet152", 32, 0, 224, "fp32", 0, 14),
    ("densenet201_timm_b32", "timm:densenet201", 32, 0, 224, "fp32", 0, 14),
    ("vit_b16_clip_timm_b32", "timm:vit_base_patch16_clip_224", 32, 0, 224, "fp32", 0, 12),
    ("beitv2_base_timm_b32", "timm:beitv2_base_patch16_224", 32, 0, 224, "fp32", 0, 12),
    ("deit3_small_timm_b64", "timm:deit3_small_patch16_224", 64, 0, 224, "fp32", 0, 10),
    ("convformer_s18_timm_b32", "timm:convformer_s18", 32, 0, 224, "fp32", 0, 12),
    ("caformer_s18_timm_b32", "timm:caformer_s18", 32, 0, 224, "fp32", 0, 12),
    ("poolformerv2_s12_timm_b64", "timm:poolformerv2_s12", 64, 0, 224, "fp32", 0, 12),
    ("inception_next_tiny_timm_b32", "timm:inception_next_tiny", 32, 0, 224, "fp32", 0, 12),
    ("efficientformerv2_s0_timm_b64", "timm:efficientformerv2_s0", 64, 0, 224, "fp32", 0, 10),
    ("repvit_m1_timm_b64", "timm:repvit_m1", 64, 0, 224, "fp32", 0, 10),
    ("hiera_tiny_timm_b32", "timm:hiera_tiny_224", 32, 0, 224, "fp32", 0, 12),
    ("mambaout_femto_timm_b64", "timm:mambaout_femto", 64, 0, 224, "fp32", 0, 12),
    ("mobilenetv4_small_timm_b128", "timm:mobilenetv4_conv_small", 128, 0, 224, "fp32", 0, 10),
    ("mobilenet_v3_small_b256", "tv:mobilenet_v3_small", 256, 0, 224, "fp32", 0, 10),
    ("wide_resnet101_2_b16", "tv:wide_resnet101_2", 16, 0, 224, "fp32", 0, 12),
    ("deberta_v3_small_b8_s512", "hf:deberta_v3_small", 8, 512, 0, "fp32", 0, 14),
    ("gptj_small_b4_s1024", "hf:gptj", 4, 1024, 0, "fp32", 0, 14),
    ("stablelm_small_b4_s1024", "hf:stablelm", 4, 1024, 0, "fp32", 0, 14),
    ("codegen_small_b4_s1024", "hf:codegen", 4, 1024, 0, "fp32", 0, 14),
    ("hf_siglip_b32", "hfv:siglip", 32, 0, 224, "fp32", 0, 12),
    ("sebotnet33ts_timm_b32", "timm:sebotnet33ts_256", 32, 0, 256, "fp32", 0, 12),
    ("halonet26t_timm_b32", "timm:halonet26t", 32, 0, 256, "fp32", 0, 12),
    ("lambda_resnet26t_timm_b32", "timm:lambda_resnet26t", 32, 0, 256, "fp32", 0, 12),
    ("gcvit_xxtiny_timm_b32", "timm:gcvit_xxtiny", 32, 0, 224, "fp32", 0, 10),
    ("davit_tiny_timm_b32", "timm:davit_tiny", 32, 0, 224, "fp32", 0, 12),
    ("nest_tiny_timm_b32", "timm:nest_tiny", 32, 0, 224, "fp32", 0, 12),
    ("focalnet_tiny_srf_timm_b32", "timm:focalnet_tiny_srf", 32, 0, 224, "fp32", 0, 12),
    ("regnety_032_timm_b32", "timm:regnety_032", 32, 0, 224, "fp32", 0, 12),
    ("dla60x_timm_b32", "timm:dla60x", 32, 0, 224, "fp32", 0, 12),
    ("selecsls42b_timm_b64", "timm:selecsls42b", 64, 0, 224, "fp32", 0, 12),
    ("cspresnext50_timm_b32", "timm:cspresnext50", 32, 0, 256, "fp32", 0, 12),
    ("eca_nfnet_l0_timm_b32", "timm:eca_nfnet_l0", 32, 0, 224, "fp32", 0, 12),
    ("resnest101e_timm_b16", "timm:resnest101e", 16, 0, 256, "fp32", 0, 12),
    ("efficientnetv2_rw_m_timm_b8", "timm:efficientnetv2_rw_m", 8, 0, 320, "fp32", 0, 12),
    ("roberta_large_b4_s512", "hf:roberta_large", 4, 512, 0, "fp32", 0, 16),
    ("mpt_small_b4_s1024", "hf:mpt", 4, 1024, 0, "fp32", 0, 14),
    ("granite_small_b4_s1024", "hf:granite", 4, 1024, 0, "fp32", 0, 14),
    # batch and sequence sweeps of measured families, and a few unseen sizes (H200, 2026-11-27)
    ("resnet50_b16", "tv:resnet50", 16, 0, 224, "fp32", 0, 5),
    ("resnet50_b256", "tv:resnet50", 256, 0, 224, "fp32", 0, 48),
    ("resnet50_b128_amp", "tv:resnet50", 128, 0, 224, "amp", 0, 16),
    ("resnet50_b128_bf16", "tv:resnet50", 128, 0, 224, "bf16", 0, 16),
    ("resnet34_b128", "tv:resnet34", 128, 0, 224, "fp32", 0, 12),
    ("resnet18_b512", "tv:resnet18", 512, 0, 224, "fp32", 0, 30),
    ("vit_b_16_b96", "tv:vit_b_16", 96, 0, 224, "fp32", 0, 36),
    ("vit_b_32_b128", "tv:vit_b_32", 128, 0, 224, "fp32", 0, 12),
    ("convnext_tiny_b128", "tv:convnext_tiny", 128, 0, 224, "fp32", 0, 30),
    ("efficientnet_b0_b256", "tv:efficientnet_b0", 256, 0, 224, "fp32", 0, 40),
    ("efficientnet_b1_b64", "tv:efficientnet_b1", 64, 0, 240, "fp32", 0, 14),
    ("densenet121_b16", "tv:densenet121", 16, 0, 224, "fp32", 0, 5),
    ("densenet169_b64", "tv:densenet169", 64, 0, 224, "fp32", 0, 16),
    ("mobilenet_v2_b512", "tv:mobilenet_v2", 512, 0, 224, "fp32", 0, 50),
    ("regnet_y_800mf_b128", "tv:regnet_y_800mf", 128, 0, 224, "fp32", 0, 16),
    ("swin_t_b128", "tv:swin_t", 128, 0, 224, "fp32", 0, 40),
    ("vgg16_b64", "tv:vgg16", 64, 0, 224, "fp32", 0, 18),
    ("bert_base_mlm_b64_s128", "hf:bert", 64, 128, 0, "fp32", 0, 14),
    ("bert_base_mlm_b8_s512", "hf:bert", 8, 512, 0, "fp32", 0, 8),
    ("bert_base_mlm_b128_s128_bf16", "hf:bert", 128, 128, 0, "bf16", 0, 16),
    ("distilbert_mlm_b64_s512", "hf:distilbert", 64, 512, 0, "fp32", 0, 28),
    ("gpt2_b4_s1024", "hf:gpt2", 4, 1024, 0, "fp32", 0, 12),
    ("gpt2_b32_s256", "hf:gpt2", 32, 256, 0, "fp32", 0, 18),
    ("t5_small_b64_s128", "hf:t5", 64, 128, 0, "fp32", 0, 12),
    ("opt125m_b32_s256", "hf:opt", 32, 256, 0, "fp32", 0, 14),
    ("llama_small_b16_s512_bf16", "hf:llama", 16, 512, 0, "bf16", 0, 14),
]
# transformers vision models, NAME -> (class prefix, configuration arguments): the
# configuration's defaults are the size named in the run (EfficientNet's are B7, so B0's
# coefficients are given), with 1000 classes.
HF_VISION = {
    "resnet": ("ResNet", {}),
    "convnext": ("ConvNext", {}),
    "convnextv2": ("ConvNextV2", {}),
    "regnet": ("RegNet", {}),
    "mobilenet_v2": ("MobileNetV2", {}),
    "efficientnet": ("EfficientNet", dict(width_coefficient=1.0, depth_coefficient=1.0,
                                          image_size=224, dropout_rate=0.2, hidden_dim=1280)),
    "poolformer": ("PoolFormer", {}),
    "dinov2": ("Dinov2", {}),
    "levit": ("Levit", {}),
    "segformer": ("Segformer", {}),
    "swin": ("Swin", {}),
    "swin_base": ("Swin", dict(embed_dim=128, depths=[2, 2, 18, 2], num_heads=[4, 8, 16, 32])),
    "beit": ("Beit", {}),
    "deit": ("DeiT", {}),
    "bit": ("Bit", {}),
    "mobilevit": ("MobileViT", {}),
    "siglip": ("Siglip", {}),
}
# More transformers models, built from these configurations (the base size of each, or a
# small one for the decoders): builder name -> (model class, configuration class, arguments).
# sdpa where the model takes it, else its default attention.
MORE_HF = {
    "deberta_v3": ("DebertaV2ForMaskedLM", "DebertaV2Config",
                   dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                        intermediate_size=3072, vocab_size=128100, relative_attention=True,
                        position_buckets=256, max_relative_positions=-1,
                        pos_att_type=["p2c", "c2p"], norm_rel_ebd="layer_norm",
                        share_att_key=True, position_biased_input=False)),
    "albert": ("AlbertForMaskedLM", "AlbertConfig",
               dict(hidden_size=768, num_attention_heads=12, intermediate_size=3072,
                    embedding_size=128)),
    "electra": ("ElectraForMaskedLM", "ElectraConfig", {}),
    "longformer": ("LongformerForMaskedLM", "LongformerConfig",
                   dict(max_position_embeddings=4098)),
    "gpt_neox": ("GPTNeoXForCausalLM", "GPTNeoXConfig",
                 dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                      intermediate_size=3072, vocab_size=50304, rotary_pct=0.25)),
    "olmo2": ("Olmo2ForCausalLM", "Olmo2Config",
              dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                   num_attention_heads=16, vocab_size=50304)),
    "gemma": ("GemmaForCausalLM", "GemmaConfig",
              dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=8,
                   num_attention_heads=4, num_key_value_heads=1, head_dim=256,
                   vocab_size=256000)),
    "mistral": ("MistralForCausalLM", "MistralConfig",
                dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                     num_attention_heads=16, num_key_value_heads=4, vocab_size=32000)),
    "phi": ("PhiForCausalLM", "PhiConfig",
            dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=8,
                 num_attention_heads=16, vocab_size=51200)),
    "modernbert": ("ModernBertForMaskedLM", "ModernBertConfig", {}),
    "xlm_roberta": ("XLMRobertaForMaskedLM", "XLMRobertaConfig", dict(vocab_size=250002)),
    "mpnet": ("MPNetForMaskedLM", "MPNetConfig", {}),
    "qwen3": ("Qwen3ForCausalLM", "Qwen3Config",
              dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=8,
                   num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                   vocab_size=151936)),
    "bert_large": ("BertForMaskedLM", "BertConfig",
                   dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                        intermediate_size=4096)),
    "gpt2_medium": ("GPT2LMHeadModel", "GPT2Config",
                    dict(n_embd=1024, n_layer=24, n_head=16)),
    "mixtral": ("MixtralForCausalLM", "MixtralConfig",
                dict(hidden_size=512, intermediate_size=1024, num_hidden_layers=4,
                     num_attention_heads=8, num_key_value_heads=2, num_local_experts=8,
                     num_experts_per_tok=2, vocab_size=32000)),
    "falcon": ("FalconForCausalLM", "FalconConfig",
               dict(hidden_size=1024, num_hidden_layers=8, num_attention_heads=16,
                    vocab_size=65024)),
    "bloom": ("BloomForCausalLM", "BloomConfig",
              dict(hidden_size=1024, n_layer=8, n_head=16, vocab_size=250880)),
    "t5_v11": ("T5ForConditionalGeneration", "T5Config",
               dict(feed_forward_proj="gated-gelu", d_model=512, d_ff=1024, num_layers=8,
                    num_heads=6, d_kv=64, vocab_size=32128, tie_word_embeddings=False,
                    decoder_start_token_id=0, pad_token_id=0)),
    "gpt_bigcode": ("GPTBigCodeForCausalLM", "GPTBigCodeConfig",
                    dict(n_embd=768, n_layer=12, n_head=12, multi_query=True,
                         vocab_size=49152)),
    "phi3": ("Phi3ForCausalLM", "Phi3Config",
             dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                  num_attention_heads=16, num_key_value_heads=16, vocab_size=32064,
                  pad_token_id=0)),
    "opt350": ("OPTForCausalLM", "OPTConfig",
               dict(hidden_size=1024, ffn_dim=4096, num_hidden_layers=8, num_attention_heads=16,
                    word_embed_proj_dim=512, vocab_size=50272)),
    "mobilebert": ("MobileBertForMaskedLM", "MobileBertConfig", {}),
    "funnel": ("FunnelForMaskedLM", "FunnelConfig", {}),
    "pegasus": ("PegasusForConditionalGeneration", "PegasusConfig",
                dict(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                     decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                     vocab_size=96103)),
    "marian": ("MarianMTModel", "MarianConfig",
               dict(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                    decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                    vocab_size=58101, decoder_start_token_id=58100, pad_token_id=58100)),
    "bigbird": ("BigBirdForMaskedLM", "BigBirdConfig", dict(attention_type="block_sparse")),
    "convbert": ("ConvBertForMaskedLM", "ConvBertConfig", {}),
    "electra_base": ("ElectraForMaskedLM", "ElectraConfig",
                     dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                          intermediate_size=3072, embedding_size=768)),
    "deberta_v3_small": ("DebertaV2ForMaskedLM", "DebertaV2Config",
                         dict(hidden_size=768, num_hidden_layers=6, num_attention_heads=12,
                              intermediate_size=3072, vocab_size=128100,
                              relative_attention=True, position_buckets=256,
                              max_relative_positions=-1, pos_att_type=["p2c", "c2p"],
                              norm_rel_ebd="layer_norm", share_att_key=True,
                              position_biased_input=False)),
    "gptj": ("GPTJForCausalLM", "GPTJConfig",
             dict(n_embd=1024, n_layer=8, n_head=16, rotary_dim=64, vocab_size=50400)),
    "stablelm": ("StableLmForCausalLM", "StableLmConfig",
                 dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                      num_attention_heads=16, num_key_value_heads=16, vocab_size=50304)),
    "codegen": ("CodeGenForCausalLM", "CodeGenConfig",
                dict(n_embd=1024, n_layer=8, n_head=16, rotary_dim=64, vocab_size=51200)),
    "roberta_large": ("RobertaForMaskedLM", "RobertaConfig",
                      dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                           intermediate_size=4096, vocab_size=50265,
                           max_position_embeddings=514)),
    "mpt": ("MptForCausalLM", "MptConfig",
            dict(d_model=1024, n_heads=16, n_layers=8, vocab_size=50432)),
    "granite": ("GraniteForCausalLM", "GraniteConfig",
                dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                     num_attention_heads=16, num_key_value_heads=4, vocab_size=49152)),
    "gemma2": ("Gemma2ForCausalLM", "Gemma2Config",
               dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=8,
                    num_attention_heads=8, num_key_value_heads=4, head_dim=128,
                    vocab_size=256000)),
}
FIELDS = ["run", "summary", "batch", "seq_len", "image_size", "precision", "optimizer",
          "checkpointing", "attention", "dtype", "peak_mib", "reserved_mib", "allocated_mib", "context_mib",
          "params", "trained_params", "status"]


def mib(b):
    return round(b / 1048576.0, 1)


class NvmlPeak:
    """Largest per-process used memory NVML reports for this pid."""

    def __init__(self):
        self.peak = 0
        self.ok = False
        self.stop = False
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nv = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            self.ok = True
        except Exception as e:  # no NVML: peak stays 0, reported as such
            print(f"nvml: {e}", file=sys.stderr)

    def read(self):
        if not self.ok:
            return 0
        pid = os.getpid()
        try:
            for p in self.nv.nvmlDeviceGetComputeRunningProcesses(self.handle):
                if p.pid == pid and p.usedGpuMemory is not None:
                    self.peak = max(self.peak, p.usedGpuMemory)
        except Exception:
            pass
        return self.peak

    def start(self):
        def loop():
            while not self.stop:
                self.read()
                time.sleep(0.005)
        self.t = threading.Thread(target=loop, daemon=True)
        self.t.start()

    def finish(self):
        self.stop = True
        if self.ok:
            self.t.join()
        return self.read()


def build(builder, image_size, seq):
    """The model and a function (batch) -> (inputs dict or tensor, loss function)."""
    import torch
    kind, name = builder.split(":", 1)

    def image_inputs(b):
        x = torch.randn(b, 3, image_size, image_size, device="cuda")
        y = torch.randint(0, 1000, (b,), device="cuda")
        return (x,), y
    if kind == "tv":
        import torchvision
        kw = {"weights": None}
        if name in ("inception_v3", "googlenet"):
            kw.update(aux_logits=False, init_weights=False)
        return getattr(torchvision.models, name)(**kw), image_inputs, "cls"
    if kind == "timm":
        import timm
        return timm.create_model(name, pretrained=False, num_classes=1000), image_inputs, "cls"
    import transformers as tf
    if kind == "hfv":
        prefix, kw = HF_VISION[name]
        cfg = getattr(tf, prefix + "Config")(num_labels=1000, **kw)
        model = getattr(tf, prefix + "ForImageClassification")(cfg)

        def hfv_inputs(b):
            x = torch.randn(b, 3, image_size, image_size, device="cuda")
            y = torch.randint(0, 1000, (b,), device="cuda")
            return {"pixel_values": x, "labels": y}, None
        return model, hfv_inputs, "hf"
    # NAME[-lora][-bf16base]: LoRA adapters (peft) on q and v over a base kept in fp32 or
    # cast to bfloat16 before the adapters are added
    base16 = name.endswith("-bf16base")
    name = name.removesuffix("-bf16base")
    lora = name.endswith("-lora")
    name = name.removesuffix("-lora")

    def sdpa(cls, **kw):  # older configs take no attn_implementation
        try:
            return cls(attn_implementation="sdpa", **kw)
        except (TypeError, ValueError):
            return cls(**kw)
    if name == "bert":
        model = tf.BertForMaskedLM(sdpa(tf.BertConfig))
    elif name == "roberta":
        model = tf.RobertaForMaskedLM(sdpa(tf.RobertaConfig))
    elif name == "distilbert":
        model = tf.DistilBertForMaskedLM(sdpa(tf.DistilBertConfig))
    elif name == "gpt2":
        model = tf.GPT2LMHeadModel(sdpa(tf.GPT2Config))
    elif name == "opt":
        model = tf.OPTForCausalLM(sdpa(tf.OPTConfig))
    elif name == "t5":  # transformers 5's T5Config() sets no decoder start token
        model = tf.T5ForConditionalGeneration(tf.T5Config(decoder_start_token_id=0,
                                                           pad_token_id=0))
    elif name == "bart":
        model = tf.BartForConditionalGeneration(sdpa(tf.BartConfig))
    elif name == "llama":
        cfg = sdpa(tf.LlamaConfig, hidden_size=1024, intermediate_size=2816,
                   num_hidden_layers=8, num_attention_heads=16, num_key_value_heads=4,
                   vocab_size=32000, max_position_embeddings=2048)
        model = tf.LlamaForCausalLM(cfg)
    elif name == "qwen2":
        cfg = sdpa(tf.Qwen2Config, hidden_size=896, intermediate_size=4864,
                   num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                   vocab_size=151936, max_position_embeddings=4096, tie_word_embeddings=True)
        model = tf.Qwen2ForCausalLM(cfg)
    elif name == "vit":
        model = tf.ViTForImageClassification(sdpa(tf.ViTConfig, num_labels=1000))

        def vit_inputs(b):
            x = torch.randn(b, 3, image_size, image_size, device="cuda")
            y = torch.randint(0, 1000, (b,), device="cuda")
            return {"pixel_values": x, "labels": y}, None
        return model, vit_inputs, "hf"
    elif name in MORE_HF:
        mcls, ccls, kw = MORE_HF[name]
        mcls, ccls = getattr(tf, mcls), getattr(tf, ccls)
        try:
            model = mcls(ccls(attn_implementation="sdpa", **kw))
        except (TypeError, ValueError):
            model = mcls(ccls(**kw))
    else:
        raise SystemExit(f"unknown builder {builder}")
    if base16:
        model = model.to(torch.bfloat16)
    if lora:
        import peft
        seq2seq = name in ("t5", "bart")
        lc = peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05,
                             target_modules=["q", "v"] if name == "t5" else ["q_proj", "v_proj"],
                             task_type="SEQ_2_SEQ_LM" if seq2seq else "CAUSAL_LM")
        model = peft.get_peft_model(model, lc)
    vocab = model.config.vocab_size

    def hf_inputs(b):
        ids = torch.randint(0, vocab, (b, seq), device="cuda")
        if name == "t5":
            return {"input_ids": ids,
                    "labels": torch.randint(0, vocab, (b, seq), device="cuda")}, None
        return {"input_ids": ids, "labels": ids}, None
    return model, hf_inputs, "hf"


def floor_run():
    import torch
    a = torch.randn(256, 256, device="cuda")
    (a @ a).sum().item()
    conv = torch.nn.Conv2d(3, 8, 3).cuda()
    x = torch.randn(2, 3, 32, 32, device="cuda", requires_grad=True)
    conv(x).sum().backward()
    torch.cuda.synchronize()
    n = sum(p.numel() for p in conv.parameters())
    return n, n


def one(run, outdir):
    import torch
    r = [x for x in RUNS if x[0] == run]
    if not r:
        raise SystemExit(f"unknown run {run}")
    name, builder, batch, seq, img, prec, ckpt, _ = r[0]
    row = dict(run=name, summary="" if builder == "floor" else name + ".txt", batch=batch,
               seq_len=seq, image_size=img, precision=prec, optimizer="adamw",
               checkpointing=ckpt, status="ok")
    nv = NvmlPeak()
    nv.start()
    try:
        if builder == "floor":
            params, trained = floor_run()
        else:
            model, inputs, kind = build(builder, img, seq)
            cfg = getattr(model, "config", None)
            row["attention"] = getattr(cfg, "_attn_implementation", "") if cfg else ""
            if builder.startswith("tv:vit_"):  # nn.MultiheadAttention(need_weights=False): SDPA
                row["attention"] = "sdpa"
            if any(getattr(m, "fused_attn", False) for m in model.modules()):  # timm
                row["attention"] = "sdpa"
            row["dtype"] = str(next(model.parameters()).dtype).replace("torch.", "")
            with open(os.path.join(outdir, name + ".txt"), "w") as f:
                print(model, file=f)
            model = model.cuda().train()
            if ckpt:
                model.gradient_checkpointing_enable()
                model.config.use_cache = False
            params = sum(p.numel() for p in model.parameters())
            trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
            opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                    lr=1e-4)
            scaler = torch.amp.GradScaler("cuda") if prec == "amp" else None
            dtype = {"amp": torch.float16, "bf16": torch.bfloat16}.get(prec)
            for _ in range(STEPS):
                x, y = inputs(batch)
                with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
                    if kind == "cls":
                        loss = torch.nn.functional.cross_entropy(model(*x), y)
                    else:
                        loss = model(**x).loss
                if scaler:
                    scaler.scale(loss).backward()
                    scaler.step(opt)
                    scaler.update()
                else:
                    loss.backward()
                    opt.step()
                opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
        peak = nv.finish()
        res, alloc = torch.cuda.max_memory_reserved(), torch.cuda.max_memory_allocated()
        row.update(peak_mib=mib(peak), reserved_mib=mib(res), allocated_mib=mib(alloc),
                   context_mib=mib(peak - torch.cuda.memory_reserved()) if peak else "",
                   params=params, trained_params=trained)
    except getattr(torch, "OutOfMemoryError", MemoryError) as e:
        nv.finish()
        row.update(status="oom: " + str(e).split("\n")[0][:200])
    except Exception as e:
        nv.finish()
        row.update(status=f"error: {type(e).__name__}: {str(e)[:300]}")
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(row, f)
    print(json.dumps(row), flush=True)


def sdpa_probe():
    import torch
    import torch.nn.functional as F
    b, h, kv, s, d = 4, 16, 4, 1024, 64
    probs = b * h * s * s * 4 / 1048576
    print(f"sdpa probe: batch {b}, {h} query heads, seq {s}, head {d}: "
          f"fp32 probabilities {probs:.0f} MiB")
    for dt in (torch.float32, torch.float16):
        for heads_kv in (kv, h):
            q = torch.randn(b, h, s, d, device="cuda", dtype=dt, requires_grad=True)
            k = torch.randn(b, heads_kv, s, d, device="cuda", dtype=dt, requires_grad=True)
            v = torch.randn(b, heads_kv, s, d, device="cuda", dtype=dt, requires_grad=True)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                 enable_gqa=heads_kv != h)
            kept = torch.cuda.memory_allocated() - base
            out.sum().backward()
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - base
            print(f"  {str(dt)[6:]:8s} kv heads {heads_kv:2d}: kept after forward "
                  f"{kept / 1048576:7.1f} MiB, peak {peak / 1048576:7.1f} MiB", flush=True)
            del q, k, v, out


def main(argv):
    if argv == ["--sdpa-probe"]:
        return sdpa_probe()
    if len(argv) >= 3 and argv[0] == "--one":
        return one(argv[1], argv[2])
    if not argv:
        raise SystemExit(__doc__)
    outdir = argv[0]
    os.makedirs(outdir, exist_ok=True)
    want = argv[1:]
    runs = [r for r in RUNS if not want or r[0] in want]
    budget = float(os.environ.get("GPU_PEAKS_BUDGET_GIB", "64"))
    t0 = time.time()
    # the floor first, alone on the GPU
    for r in runs:
        if r[0] == "floor":
            subprocess.run([sys.executable, __file__, "--one", r[0], outdir])
    pending = sorted((r for r in runs if r[0] != "floor"), key=lambda r: -r[7])
    live = []
    while pending or live:
        live = [(p, h) for p, h in live if p.poll() is None]
        used = sum(h for _, h in live)
        for r in list(pending):
            if used + r[7] <= budget or not live:
                p = subprocess.Popen([sys.executable, __file__, "--one", r[0], outdir])
                live.append((p, r[7]))
                pending.remove(r)
                used += r[7]
        time.sleep(0.1)
    rows = []
    for r in runs:
        try:
            with open(os.path.join(outdir, r[0] + ".json")) as f:
                rows.append(json.load(f))
        except OSError:
            rows.append(dict(run=r[0], status="no result"))
    with open(os.path.join(outdir, "index.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        for row in rows:
            w.writerow({k: row.get(k, "") for k in FIELDS})
    print(f"gpu_peaks: {len(rows)} runs in {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
