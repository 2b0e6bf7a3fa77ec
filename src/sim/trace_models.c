/* Memory models (and Gavel throughputs) for the model names of the Muri and Gavel
 * traces. The rows equal data/model-profiles.csv, which tools/gen_profiles.c writes
 * from data/workloads.csv and the assumptions in docs/traces.md; a unit test keeps
 * the two identical. */
#include <string.h>

#include "sim/trace.h"

static const struct sim_model_profile profiles[] = {
    {"resnet18", 757.0, 0.763, 0, "fit:workloads.csv resnet18 (b32=788 b64=796 b128=858)"},
    {"ResNet-18 (batch size 16)", 757.0, 0.763, 77.317, "fit:workloads.csv resnet18 (b32=788 b64=796 b128=858)"},
    {"ResNet-18 (batch size 32)", 757.0, 0.763, 65.805, "fit:workloads.csv resnet18 (b32=788 b64=796 b128=858)"},
    {"ResNet-18 (batch size 64)", 757.0, 0.763, 48.884, "fit:workloads.csv resnet18 (b32=788 b64=796 b128=858)"},
    {"ResNet-18 (batch size 128)", 757.0, 0.763, 30.288, "fit:workloads.csv resnet18 (b32=788 b64=796 b128=858)"},
    {"ResNet-18 (batch size 256)", 757.0, 0.763, 16.987, "fit:workloads.csv resnet18 (b32=788 b64=796 b128=858)"},
    {"ResNet-50 (batch size 16)", 869.0, 96.737, 17.374, "fit:workloads.csv resnet50 (b32=3934 b64=7106 b128=13236)"},
    {"ResNet-50 (batch size 32)", 869.0, 96.737, 9.9206, "fit:workloads.csv resnet50 (b32=3934 b64=7106 b128=13236)"},
    {"ResNet-50 (batch size 64)", 869.0, 96.737, 5.4576, "fit:workloads.csv resnet50 (b32=3934 b64=7106 b128=13236)"},
    {"ResNet-50 (batch size 128)", 869.0, 96.737, 2.846, "fit:workloads.csv resnet50 (b32=3934 b64=7106 b128=13236)"},
    {"vgg16", 1632.0, 158.089, 0, "fit:workloads.csv vgg16 (b32=6684 b64=11760 b128=21864)"},
    {"shufflenet_v2_x1_0", 700.0, 83.125, 0, "fit:workloads.csv mobilenet_v2 (b32=3352 b64=6032 b128=11336)"},
    {"bert", 2268.5, 548.735, 0, "assume:BERT_base b32=19828 measured; base 590+110M params x16 B; rest per sample"},
    {"gpt2", 2482.1, 548.735, 0, "assume:as bert (12 layers x 768 like BERT-base); base 590+124M params x16 B"},
    {"vgg19", 1694.5, 173.257, 0, "assume:vgg16 fit; base x params 143.7M/138.4M; per sample x conv outputs 14.85M/13.55M"},
    {"dqn", 615.9, 0.600, 0, "assume:Atari Nature CNN 1.7M params; 4x84x84 input + activations ~0.6 MiB/sample"},
    {"a2c", 615.9, 0.600, 0, "assume:as dqn (same Atari CNN)"},
    {"A3C", 615.9, 0.600, 8.233, "assume:as dqn (same Atari CNN); batch 1"},
    {"CycleGAN", 1021.8, 2000.000, 4.9185, "assume:2 generators + 2 discriminators 28.3M params; 256x256 activations ~2 GiB/image; batch 1"},
    {"Transformer (batch size 16)", 1352.9, 16.000, 12.846, "assume:6+6 layer d512 translation model ~50M params; ~30-token sentences ~16 MiB/sample"},
    {"Transformer (batch size 32)", 1352.9, 16.000, 12.475, "assume:6+6 layer d512 translation model ~50M params; ~30-token sentences ~16 MiB/sample"},
    {"Transformer (batch size 64)", 1352.9, 16.000, 9.568, "assume:6+6 layer d512 translation model ~50M params; ~30-token sentences ~16 MiB/sample"},
    {"Transformer (batch size 128)", 1352.9, 16.000, 5.7712, "assume:6+6 layer d512 translation model ~50M params; ~30-token sentences ~16 MiB/sample"},
    {"Transformer (batch size 256)", 1352.9, 16.000, 1.707, "assume:6+6 layer d512 translation model ~50M params; ~30-token sentences ~16 MiB/sample"},
    {"LM (batch size 5)", 796.0, 13.300, 167.12, "assume:2-layer LSTM LM on WikiText-2 13.5M params; bptt 35 x 33278-word logits ~13.3 MiB/sample"},
    {"LM (batch size 10)", 796.0, 13.300, 143.36, "assume:2-layer LSTM LM on WikiText-2 13.5M params; bptt 35 x 33278-word logits ~13.3 MiB/sample"},
    {"LM (batch size 20)", 796.0, 13.300, 107.95, "assume:2-layer LSTM LM on WikiText-2 13.5M params; bptt 35 x 33278-word logits ~13.3 MiB/sample"},
    {"LM (batch size 40)", 796.0, 13.300, 71.723, "assume:2-layer LSTM LM on WikiText-2 13.5M params; bptt 35 x 33278-word logits ~13.3 MiB/sample"},
    {"LM (batch size 80)", 796.0, 13.300, 43.904, "assume:2-layer LSTM LM on WikiText-2 13.5M params; bptt 35 x 33278-word logits ~13.3 MiB/sample"},
    {"Recommendation (batch size 512)", 957.7, 0.380, 0.33148, "assume:autoencoder CF on ML-20M 20108 items x600 hidden 24.1M params; ~0.38 MiB/sample"},
    {"Recommendation (batch size 1024)", 957.7, 0.380, 0.47998, "assume:autoencoder CF on ML-20M 20108 items x600 hidden 24.1M params; ~0.38 MiB/sample"},
    {"Recommendation (batch size 2048)", 957.7, 0.380, 0.56753, "assume:autoencoder CF on ML-20M 20108 items x600 hidden 24.1M params; ~0.38 MiB/sample"},
    {"Recommendation (batch size 4096)", 957.7, 0.380, 0.62441, "assume:autoencoder CF on ML-20M 20108 items x600 hidden 24.1M params; ~0.38 MiB/sample"},
    {"Recommendation (batch size 8192)", 957.7, 0.380, 0.60235, "assume:autoencoder CF on ML-20M 20108 items x600 hidden 24.1M params; ~0.38 MiB/sample"},
};

const struct sim_model_profile *sim_model_profiles(size_t *n)
{
    *n = sizeof profiles / sizeof profiles[0];
    return profiles;
}

const struct sim_model_profile *sim_model_profile_find(const char *name)
{
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++)
        if (strcmp(profiles[i].name, name) == 0)
            return &profiles[i];
    return NULL;
}
