"""Host side of the six entry points: each `run_*` uploads numpy inputs (bf16 values as float32 arrays, f32,
i32), launches the kernel with the given `launch` (the CPU backend's `furiosa_opt.launch`, or the simulator's)
and returns the outputs as float32 numpy arrays. The decode loop (`Decoder`) keeps its weights, KV caches and
running attention state in HBM between launches, as upstream's `Pipeline` does."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from furiosa_opt import Context, HbmTensor, HostTensor, bf16, f32, i32, launch, m
from transformer import kernel as K
from transformer import reference as R
from transformer.kernel import D, G, H, L, N, P, Q, T, Wp  # noqa: F401 (named inside m["..."] strings)

Launch = Callable


def upload(ctx: Context, values, dtype, mapping) -> HbmTensor:
    storage = {bf16: ml_dtypes.bfloat16, f32: np.float32, i32: np.int32}[dtype]
    return HostTensor.from_numpy(np.asarray(values, dtype=storage), dtype, mapping).to_hbm(ctx.pdma)


def read(ctx: Context, tensor: HbmTensor) -> np.ndarray:
    return np.asarray(tensor.to_host(ctx.pdma).to_numpy(), dtype=np.float32)


def run_embedding(ctx: Context, row: np.ndarray, launch_: Launch = launch) -> np.ndarray:
    out = HbmTensor.new(bf16, K.Chip, m["H"])
    launch_(K.embedding, ctx, upload(ctx, row, bf16, m["H"]), out)
    return read(ctx, out)


@dataclass
class ProjectionWeights:
    q: np.ndarray  # [Q, H]
    k: np.ndarray  # [P, H]
    v: np.ndarray  # [P, H]
    input_rms: np.ndarray  # [H]
    q_rms: np.ndarray  # [D]
    k_rms: np.ndarray  # [D]


@dataclass
class DecoderWeights:
    o: np.ndarray  # [H, Q]
    post_rms: np.ndarray  # [H]
    up: np.ndarray  # [L, H]
    gate: np.ndarray  # [L, H]
    down: np.ndarray  # [H, L]


def run_projection(
    ctx: Context,
    x: np.ndarray,
    weights: ProjectionWeights,
    position: int,
    cos: np.ndarray,
    sin: np.ndarray,
    k_cache: np.ndarray | None = None,
    v_cache: np.ndarray | None = None,
    launch_: Launch = launch,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(q [N, G, D], k_cache [T, N, D], v_cache [T, N, D])` after one launch writing row `position`."""
    zeros = np.zeros((K.T.size, K.N.size, K.D.size), np.float32)
    k_hbm = upload(ctx, zeros if k_cache is None else k_cache, bf16, m["T, N, D"])
    v_hbm = upload(ctx, zeros if v_cache is None else v_cache, bf16, m["T, N, D"])
    q_hbm = HbmTensor.new(bf16, K.Chip, m["N, G, D"])
    launch_(
        K.projection,
        ctx,
        upload(ctx, x, bf16, m["H"]),
        upload(ctx, weights.q, bf16, m["Q, H"]),
        upload(ctx, weights.k, bf16, m["P, H"]),
        upload(ctx, weights.v, bf16, m["P, H"]),
        upload(ctx, weights.input_rms, bf16, m["H"]),
        upload(ctx, weights.q_rms, bf16, m["D"]),
        upload(ctx, weights.k_rms, bf16, m["D"]),
        upload(ctx, [position * K.ROW_BYTES], i32, m["1"]),
        upload(ctx, cos, bf16, m["D"]),
        upload(ctx, sin, bf16, m["D"]),
        k_hbm,
        v_hbm,
        q_hbm,
    )
    return read(ctx, q_hbm), read(ctx, k_hbm), read(ctx, v_hbm)


def run_attention(
    ctx: Context, q: np.ndarray, chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]], launch_: Launch = launch
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(max [N, G], sum [N, G], out [N, G, D])` after `attention_forward_first` on the first `(k, v, mask)`
    chunk and `attention_forward` on each later one."""
    q_hbm = upload(ctx, q, bf16, m["N, G, D"])
    state = [HbmTensor.new(f32, K.Chip, m["N, G"]), HbmTensor.new(f32, K.Chip, m["N, G"])]
    out = HbmTensor.new(bf16, K.Chip, m["N, G, D"])
    for i, (k, v, mask) in enumerate(chunks):
        kernel = K.attention_forward_first if i == 0 else K.attention_forward
        k_hbm, v_hbm = upload(ctx, k, bf16, m["T, N, D"]), upload(ctx, v, bf16, m["T, N, D"])
        launch_(kernel, ctx, q_hbm, k_hbm, v_hbm, upload(ctx, mask, f32, m["T"]), *state, out)
    return read(ctx, state[0]), read(ctx, state[1]), read(ctx, out)


def run_decoder(
    ctx: Context, x: np.ndarray, sum_: np.ndarray, rx: np.ndarray, weights: DecoderWeights, launch_: Launch = launch
) -> np.ndarray:
    """The new hidden state `[H]` (written over `rx` in HBM)."""
    rx_hbm = upload(ctx, rx, bf16, m["H"])
    launch_(
        K.decoder,
        ctx,
        upload(ctx, x, bf16, m["N, G, D"]),
        upload(ctx, sum_, f32, m["N, G"]),
        rx_hbm,
        upload(ctx, weights.o, bf16, m["H, Q"]),
        upload(ctx, weights.post_rms, bf16, m["H"]),
        upload(ctx, weights.up, bf16, m["L, H"]),
        upload(ctx, weights.gate, bf16, m["L, H"]),
        upload(ctx, weights.down, bf16, m["H, L"]),
    )
    return read(ctx, rx_hbm)


def upload_lm_head(ctx: Context, weight: np.ndarray) -> HbmTensor:
    """The `[W, H]` lm_head weight in the kernel's layout (padded to Wp rows, 19 tiles of 8192)."""
    return upload(ctx, weight, bf16, K.LmHeadWeight)


def run_final_layer(
    ctx: Context, x: np.ndarray, rms_weight: np.ndarray, lm_head: HbmTensor, launch_: Launch = launch
) -> np.ndarray:
    """Logits `[Wp]` (rows past W come from the zero padding)."""
    out = HbmTensor.new(bf16, K.Chip, m["Wp"])
    launch_(K.final_layer, ctx, upload(ctx, x, bf16, m["H"]), upload(ctx, rms_weight, bf16, m["H"]), lm_head, out)
    return read(ctx, out)


# ---- random weights and the decode loop ----


def seeded_bf16(rng: np.random.Generator, shape, scale: float) -> np.ndarray:
    """Uniform in [-scale, scale), rounded to bf16 (upstream's `seeded_bf16`)."""
    return R.to_bf16(rng.uniform(-scale, scale, shape).astype(np.float32))


def seeded_norm(rng: np.random.Generator, n: int) -> np.ndarray:
    """A norm weight near 1: `1 + u`, u uniform in [-0.1, 0.1), rounded to bf16."""
    return R.to_bf16(1 + rng.uniform(-0.1, 0.1, n).astype(np.float32))


@dataclass
class Layer:
    projection: ProjectionWeights
    decoder: DecoderWeights


@dataclass
class Model:
    """Weights with upstream's tensor shapes, bf16 values: float32 arrays (`random_model`) or
    `ml_dtypes.bfloat16` arrays (a checkpoint, `checkpoint.load_model`); both upload as they are.

    `hidden_scale` is a power of two the hidden state is carried times: the embedding row is scaled by it
    when it is looked up, and a checkpoint's weights that add to the hidden state or feed a rmsnorm are
    stored scaled (`checkpoint.rmsnorm_scale`: how the kernels' fixed epsilon acts as the checkpoint's).

        >>> model = Model(np.array([[1.0, -2.0], [4.0, 8.0]]), [], np.ones(2), np.eye(2), hidden_scale=0.25)
        >>> model.embedding_row(1)
        array([1., 2.])
    """

    embedding: np.ndarray  # [W, H]
    layers: list[Layer]
    final_norm: np.ndarray  # [H]
    lm_head: np.ndarray  # [W, H]
    hidden_scale: float = 1.0

    def embedding_row(self, token: int) -> np.ndarray:
        """The token's row of the embedding, times `hidden_scale` (exact: a power of two)."""
        row = self.embedding[token]
        return row if self.hidden_scale == 1 else row * row.dtype.type(self.hidden_scale)


def random_model(layers: int, seed: int = 42) -> Model:
    """Random weights at the real widths: small enough that the hidden state stays in range."""
    rng = np.random.default_rng(seed)
    h, q, p, d, ll = K.H.size, K.Q.size, K.P.size, K.D.size, K.L.size
    built = []
    for _ in range(layers):
        built.append(
            Layer(
                ProjectionWeights(
                    seeded_bf16(rng, (q, h), 0.05),
                    seeded_bf16(rng, (p, h), 0.05),
                    seeded_bf16(rng, (p, h), 0.05),
                    seeded_norm(rng, h),
                    seeded_norm(rng, d),
                    seeded_norm(rng, d),
                ),
                DecoderWeights(
                    seeded_bf16(rng, (h, q), 0.02),
                    seeded_norm(rng, h),
                    seeded_bf16(rng, (ll, h), 0.03),
                    seeded_bf16(rng, (ll, h), 0.03),
                    seeded_bf16(rng, (h, ll), 0.02),
                ),
            )
        )
    embedding = seeded_bf16(rng, (K.W.size, h), 1.0)
    return Model(embedding, built, seeded_norm(rng, h), seeded_bf16(rng, (K.W.size, h), 0.05))


def greedy(
    step: Callable[[int, int], np.ndarray], prompt: list[int], max_new_tokens: int, stop: Collection[int] = ()
) -> list[int]:
    """Greedy decoding by `step(token, position) -> logits`: every prompt token is fed one at a time, then the
    arg-max token, up to `max_new_tokens` times; a token of `stop` (the end-of-sequence ids) ends it, and is
    the last one returned, as transformers' `generate` returns it.

        >>> greedy(lambda token, position: np.eye(4)[(token + 1) % 4], [0, 1], 5, stop=[0])
        [2, 3, 0]
    """
    tokens, generated = list(prompt), []
    for position in range(len(prompt) + max_new_tokens - 1):
        logits = step(tokens[position], position)
        if position >= len(prompt) - 1:
            token = int(np.argmax(logits))
            generated.append(token)
            tokens.append(token)
            if token in stop:
                break
    return generated


@dataclass
class Decoder:
    """Greedy decoding through the model's layers on one backend: weights uploaded once, a KV cache chunk of T
    rows per layer, the attention state and hidden state in HBM between launches (upstream's `Pipeline`)."""

    ctx: Context
    model: Model
    launch_: Launch = launch
    hbm: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        up = lambda values, mapping: upload(self.ctx, values, bf16, mapping)  # noqa: E731
        self.layers = []
        for layer in self.model.layers:
            p, d = layer.projection, layer.decoder
            self.layers.append(
                {
                    "projection": [
                        *(up(p.q, m["Q, H"]), up(p.k, m["P, H"]), up(p.v, m["P, H"])),
                        *(up(p.input_rms, m["H"]), up(p.q_rms, m["D"]), up(p.k_rms, m["D"])),
                    ],
                    "decoder": [
                        *(up(d.o, m["H, Q"]), up(d.post_rms, m["H"]), up(d.up, m["L, H"])),
                        *(up(d.gate, m["L, H"]), up(d.down, m["H, L"])),
                    ],
                    "cache": {},  # chunk → (k, v)
                }
            )
        self.final_norm = up(self.model.final_norm, m["H"])
        self.lm_head = upload_lm_head(self.ctx, self.model.lm_head)
        self.x = HbmTensor.new(bf16, K.Chip, m["H"])
        self.q = HbmTensor.new(bf16, K.Chip, m["N, G, D"])
        self.max = HbmTensor.new(f32, K.Chip, m["N, G"])
        self.sum = HbmTensor.new(f32, K.Chip, m["N, G"])
        self.out = HbmTensor.new(bf16, K.Chip, m["N, G, D"])
        self.logits = HbmTensor.new(bf16, K.Chip, m["Wp"])
        self.full = upload(self.ctx, np.ones(K.T.size), f32, m["T"])

    def cache(self, layer: int, chunk: int) -> tuple[HbmTensor, HbmTensor]:
        caches = self.layers[layer]["cache"]
        if chunk not in caches:
            caches[chunk] = tuple(HbmTensor.new(bf16, K.Chip, m["T, N, D"]) for _ in range(2))
        return caches[chunk]

    def step(self, token: int, position: int) -> np.ndarray:
        """One token through every layer at `position`; the logits `[W]`."""
        chunk, row = divmod(position, K.T.size)
        cos, sin = R.rope_tables(position)
        cos_hbm, sin_hbm = upload(self.ctx, cos, bf16, m["D"]), upload(self.ctx, sin, bf16, m["D"])
        offset = upload(self.ctx, [row * K.ROW_BYTES], i32, m["1"])
        causal = upload(self.ctx, (np.arange(K.T.size) <= row).astype(np.float32), f32, m["T"])
        self.launch_(K.embedding, self.ctx, upload(self.ctx, self.model.embedding_row(token), bf16, m["H"]), self.x)
        for i, layer in enumerate(self.layers):
            k_cache, v_cache = self.cache(i, chunk)
            self.launch_(
                K.projection, self.ctx, self.x, *layer["projection"], offset, cos_hbm, sin_hbm, k_cache, v_cache, self.q
            )
            for kv_chunk in range(chunk + 1):
                k, v = self.cache(i, kv_chunk)
                mask = causal if kv_chunk == chunk else self.full
                kernel = K.attention_forward_first if kv_chunk == 0 else K.attention_forward
                self.launch_(kernel, self.ctx, self.q, k, v, mask, self.max, self.sum, self.out)
            self.launch_(K.decoder, self.ctx, self.out, self.sum, self.x, *layer["decoder"])
        self.launch_(K.final_layer, self.ctx, self.x, self.final_norm, self.lm_head, self.logits)
        return read(self.ctx, self.logits)[: K.W.size]

    def generate(self, prompt: list[int], max_new_tokens: int, stop: Collection[int] = ()) -> list[int]:
        """`greedy` through the kernels."""
        return greedy(self.step, prompt, max_new_tokens, stop)


class ReferenceDecoder:
    """The same greedy decoding with reference.py (numpy), for comparison."""

    def __init__(self, model: Model):
        self.model = model
        self.k = [np.zeros((0, K.N.size, K.D.size), np.float32) for _ in model.layers]
        self.v = [np.zeros((0, K.N.size, K.D.size), np.float32) for _ in model.layers]

    def step(self, token: int, position: int) -> np.ndarray:
        t = K.T.size
        chunk, row = divmod(position, t)
        cos, sin = R.rope_tables(position)
        x = np.asarray(self.model.embedding_row(token), np.float32)
        for i, layer in enumerate(self.model.layers):
            p = layer.projection
            q, k, v = R.projection(x, p.q, p.k, p.v, p.input_rms, p.q_rms, p.k_rms, cos, sin)
            self.k[i] = np.concatenate([self.k[i], k[None]])
            self.v[i] = np.concatenate([self.v[i], v[None]])
            state = None
            for kv_chunk in range(chunk + 1):
                kc = np.zeros((t, K.N.size, K.D.size), np.float32)
                vc = np.zeros_like(kc)
                rows = self.k[i][kv_chunk * t : (kv_chunk + 1) * t]
                kc[: len(rows)], vc[: len(rows)] = rows, self.v[i][kv_chunk * t : (kv_chunk + 1) * t]
                mask = (np.arange(t) <= row).astype(np.float32) if kv_chunk == chunk else np.ones(t, np.float32)
                state = (
                    R.attention_first(q, kc, vc, mask) if state is None else R.attention_next(q, kc, vc, mask, *state)
                )
            d = layer.decoder
            x = R.decoder(state[2], state[1], x, d.o, d.post_rms, d.up, d.gate, d.down)
        return R.final_layer(x, self.model.final_norm, self.model.lm_head)

    def generate(self, prompt: list[int], max_new_tokens: int, stop: Collection[int] = ()) -> list[int]:
        """`greedy` through the numpy reference."""
        return greedy(self.step, prompt, max_new_tokens, stop)
