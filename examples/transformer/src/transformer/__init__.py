"""Qwen3-0.6B decode on furiosa-opt: the six entry points of upstream's transformer example (`kernel`), a numpy
reference of the same math (`reference`) and a host program (`python -m transformer`); besides them,
`mlp_forward` (the decoder's MLP alone), which `torch_mlp` runs inside transformers' Qwen3ForCausalLM."""
