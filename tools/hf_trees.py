#!/usr/bin/env python3
"""Writes the printed module trees (print(model)) of the two Hugging Face
transformers CARMA trained -- BERT-base and BERT-large for masked-language
modelling, configured from scratch as in CARMA's workloads/BERT_*_on_wiki.py
(vocabulary of bert-large-cased, 28996 tokens; sequences padded to 512) -- as
transformers 4.41 to mid-2025 print them: BertForMaskedLM, no pooler, SDPA attention
(BertSdpaSelfAttention, the default since 4.41). `carma eval-estimator` compares
their estimates with the peaks CARMA measured. Usage: hf_trees.py OUTDIR"""
import os
import sys

VOCAB = 28996


def bert_mlm(hidden, layers, inter):
    h, last = hidden, layers - 1
    ln = f"LayerNorm(({h},), eps=1e-12, elementwise_affine=True)"
    drop = "Dropout(p=0.1, inplace=False)"

    def lin(i, o):
        return f"Linear(in_features={i}, out_features={o}, bias=True)"

    return f"""BertForMaskedLM(
  (bert): BertModel(
    (embeddings): BertEmbeddings(
      (word_embeddings): Embedding({VOCAB}, {h}, padding_idx=0)
      (position_embeddings): Embedding(512, {h})
      (token_type_embeddings): Embedding(2, {h})
      (LayerNorm): {ln}
      (dropout): {drop}
    )
    (encoder): BertEncoder(
      (layer): ModuleList(
        (0-{last}): {layers} x BertLayer(
          (attention): BertAttention(
            (self): BertSdpaSelfAttention(
              (query): {lin(h, h)}
              (key): {lin(h, h)}
              (value): {lin(h, h)}
              (dropout): {drop}
            )
            (output): BertSelfOutput(
              (dense): {lin(h, h)}
              (LayerNorm): {ln}
              (dropout): {drop}
            )
          )
          (intermediate): BertIntermediate(
            (dense): {lin(h, inter)}
            (intermediate_act_fn): GELUActivation()
          )
          (output): BertOutput(
            (dense): {lin(inter, h)}
            (LayerNorm): {ln}
            (dropout): {drop}
          )
        )
      )
    )
  )
  (cls): BertOnlyMLMHead(
    (predictions): BertLMPredictionHead(
      (transform): BertPredictionHeadTransform(
        (dense): {lin(h, h)}
        (transform_act_fn): GELUActivation()
        (LayerNorm): {ln}
      )
      (decoder): {lin(h, VOCAB)}
    )
  )
)
"""


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for name, text in [("bert_base_mlm", bert_mlm(768, 12, 3072)),
                       ("bert_large_mlm", bert_mlm(1024, 24, 4096))]:
        with open(os.path.join(sys.argv[1], name + ".txt"), "w") as f:
            f.write(text)
        print(name)


if __name__ == "__main__":
    main()
