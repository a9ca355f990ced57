"""attn.attention in training: the autograd Function that runs a kernel
compiled with its backward (attn.load(..., grad=True)), and, on torch with
torch.library.custom_op (2.4 and later), the custom ops attn::attention and
attn::attention_backward with fake (meta) implementations and their autograd
registration, so that a torch.compile'd model calls attn without a graph
break.

Nothing here imports attn: attn passes in what runs the kernels (register's
forward and backward), so this file never calls back into its caller.
torch is imported on first use, as everywhere in attn.
"""

_function = None


def grad_enabled():
    """torch.is_grad_enabled(), torch imported on first use."""
    import torch
    return torch.is_grad_enabled()


def deterministic_options():
    """lower-tile-to-hopper's options for the backward under
    torch.use_deterministic_algorithms(True): "deterministic=true" (dQ
    summed in one order: bitwise the same gradients every run), else None."""
    import torch
    return "deterministic=true" if torch.are_deterministic_algorithms_enabled() else None


def function():
    """The torch.autograd.Function of a kernel loaded with grad: forward runs
    it on the inputs (q, k, v and the program's extra inputs) and returns o,
    keeping the inputs, o and lse; backward runs kernel.backward on them and
    dO and returns dq, dk, dv, the gradients of the inputs at grad_at (the
    gate's g, captured tensors: the program's grads, in order) and None
    for the other inputs."""
    global _function
    if _function is None:
        import torch
        from torch.autograd.function import once_differentiable

        class AttentionFunction(torch.autograd.Function):
            @staticmethod
            def forward(ctx, kernel, grad_at, *inputs):
                o, lse = kernel(*inputs)
                ctx.kernel = kernel
                ctx.grad_at = grad_at
                ctx.save_for_backward(*inputs, o, lse)
                return o

            @staticmethod
            @once_differentiable
            def backward(ctx, dout):
                saved = ctx.saved_tensors
                grads = ctx.kernel.backward(*saved, dout.contiguous())
                out = [None] * (len(saved) - 2)  # q, k, v, ..., but o, lse
                out[:3] = grads[:3]
                # The gradients into the gate and captured tensors, in the
                # compute type: as the dtype of the input they belong to.
                for at, g in zip(ctx.grad_at, grads[3:]):
                    out[at] = g.to(saved[at].dtype)
                return (None, None) + tuple(out)

        _function = AttentionFunction
    return _function


def apply(kernel, inputs, grad_at=()):
    """o of kernel (loaded with grad) on inputs, recorded for autograd;
    grad_at: the positions in inputs of the tensors whose gradients the
    backward computes after dq, dk, dv."""
    return function().apply(kernel, tuple(grad_at), *inputs)


#===-- torch.library ------------------------------------------------------===#

# The custom ops' tensor arguments after q, k and v, in this order (None
# where an attention has no such input), and their scalar options.
EXTRAS = ("gate", "qseg", "kseg", "q_positions", "k_positions")

_ops = None


_is_compiling = None


def compiling():
    """True while torch.compile (dynamo) traces the caller: attention then
    calls the custom op (asked only once register has made it, which also
    looks torch.compiler.is_compiling up once)."""
    return bool(_is_compiling and _is_compiling())


def register(forward, backward):
    """Defines attn::attention and attn::attention_backward once, on torch
    with torch.library.custom_op; returns (the forward op, None) or (None,
    why) without. forward(q, k, v, extras, options) -> (o, lse) and
    backward(q, k, v, extras, options, o, lse, dout, gate_grad) -> (dq, dk,
    dv, dgate) run the kernels (dgate: the gate's gradient in the compute
    type when gate_grad, else an empty tensor); extras is a list of EXTRAS
    (tensors or None), options the dict options_of makes."""
    global _ops, _is_compiling
    if _ops is not None:
        return _ops
    import torch
    _is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    from typing import List, Optional, Tuple
    lib = getattr(torch, "library", None)
    if lib is None or not hasattr(lib, "custom_op") or not hasattr(lib, "register_autograd"):
        _ops = (None, "torch %s has no torch.library.custom_op (torch 2.4 or later has)"
                % torch.__version__)
        return _ops
    Tensor = torch.Tensor

    # The options travel as plain scalars: a custom op's schema takes no dict.
    @lib.custom_op("attn::attention", mutates_args=())
    def attention_op(q: Tensor, k: Tensor, v: Tensor, gate: Optional[Tensor],
                     qseg: Optional[Tensor], kseg: Optional[Tensor],
                     q_positions: Optional[Tensor], k_positions: Optional[Tensor],
                     rope: str, rope_values: List[float], mask: str,
                     window: List[int], softcap: float, alibi: float, scale: float,
                     gate_block: int, tile_options: str) -> Tuple[Tensor, Tensor]:
        o, lse = forward(q, k, v, [gate, qseg, kseg, q_positions, k_positions],
                         options_from(rope, rope_values, mask, window, softcap, alibi, scale,
                                      gate_block, tile_options))
        return o, lse

    @attention_op.register_fake
    def _(q, k, v, gate, qseg, kseg, q_positions, k_positions, rope, rope_values, mask,
          window, softcap, alibi, scale, gate_block, tile_options):
        o = q.new_empty(tuple(q.shape[:-1]) + (v.shape[-1],))
        lse = q.new_empty(tuple(q.shape[:-1]),
                          dtype=torch.float64 if q.dtype == torch.float64 else torch.float32)
        return o, lse

    @lib.custom_op("attn::attention_backward", mutates_args=())
    def backward_op(q: Tensor, k: Tensor, v: Tensor, gate: Optional[Tensor],
                    qseg: Optional[Tensor], kseg: Optional[Tensor],
                    q_positions: Optional[Tensor], k_positions: Optional[Tensor],
                    rope: str, rope_values: List[float], mask: str,
                    window: List[int], softcap: float, alibi: float, scale: float,
                    gate_block: int, tile_options: str, o: Tensor, lse: Tensor,
                    dout: Tensor, gate_grad: bool) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        return backward(q, k, v, [gate, qseg, kseg, q_positions, k_positions],
                        options_from(rope, rope_values, mask, window, softcap, alibi, scale,
                                     gate_block, tile_options), o, lse, dout,
                        gate_grad and gate is not None)

    @backward_op.register_fake
    def _(q, k, v, gate, qseg, kseg, q_positions, k_positions, rope, rope_values, mask,
          window, softcap, alibi, scale, gate_block, tile_options, o, lse, dout, gate_grad):
        # Contiguous, as the kernels write them (q, k, v may be strided views);
        # dgate in the compute type (f64 for float64 q, else f32), empty
        # when not asked for.
        ct = torch.float64 if q.dtype == torch.float64 else torch.float32
        dgate = (gate.new_empty(tuple(gate.shape), dtype=ct)
                 if gate_grad and gate is not None else q.new_empty((0,)))
        return (q.new_empty(tuple(q.shape)), k.new_empty(tuple(k.shape)),
                v.new_empty(tuple(v.shape)), dgate)

    def setup_context(ctx, inputs, output):
        ctx.args = inputs
        ctx.save_for_backward(*inputs[:8], *output)

    def op_backward(ctx, dout, dlse):
        saved = ctx.saved_tensors
        tensors, (o, lse) = saved[:8], saved[8:]
        # The gate's g (input 3) trains: the backward computes dgate too.
        gate_grad = ctx.args[3] is not None and bool(ctx.needs_input_grad[3])
        dq, dk, dv, dgate = backward_op(*tensors, *ctx.args[8:], o, lse, dout.contiguous(),
                                        gate_grad)
        dg = dgate.to(ctx.args[3].dtype) if gate_grad else None
        return (dq, dk, dv, dg) + (None,) * (len(ctx.args) - 4)

    lib.register_autograd("attn::attention", op_backward, setup_context=setup_context)

    def no_double_backward(ctx, *grads):
        raise RuntimeError("attn: the backward of attn.attention is not differentiable "
                           "(double backward is not supported)")
    lib.register_autograd("attn::attention_backward", no_double_backward,
                          setup_context=lambda ctx, inputs, output: None)
    _ops = (attention_op, None)
    return _ops


# Option names in the order options_of spells them; rope's keys and values
# travel as a comma-separated str and a float list (a schema has no str
# list), the rest as scalars.
ROPE_KEYS = ("theta", "rotary_dim", "offset", "q_offset", "k_offset", "layout")
LAYOUTS = ("rotate_half", "interleaved")


def options_of(rope, mask, window, softcap, alibi, scale, gate_block, tile_options):
    """The custom op's scalar arguments for attention's options (rope a dict,
    True or None, its tensors passed apart): written in plain Python over
    plain values, so that dynamo traces it into constants."""
    names, values = [], []
    if rope is True:
        names.append("on")
        values.append(0.0)
    elif isinstance(rope, dict):
        for n in ROPE_KEYS:
            x = rope.get(n)
            if x is not None:
                names.append(n)
                values.append(float(LAYOUTS.index(x)) if n == "layout" else float(x))
        if not names:
            names.append("on")
            values.append(0.0)
    if window is None:
        win = []
    else:
        win = [-1 if window[0] is None else window[0], -1 if window[1] is None else window[1]]
    return (",".join(names), values, mask or "", win, softcap or 0.0, alibi or 0.0, scale or 0.0,
            gate_block or 0, tile_options or "")


def options_from(rope, rope_values, mask, window, softcap, alibi, scale, gate_block,
                 tile_options):
    """attention's keyword options back from options_of's scalars (without
    the tensors)."""
    names = rope.split(",") if rope else []
    if not names:
        rope_opt = None
    elif names == ["on"]:
        rope_opt = True
    else:
        rope_opt = {}
        for n, x in zip(names, rope_values):
            if n == "layout":
                rope_opt[n] = LAYOUTS[int(x)]
            elif n == "theta":
                rope_opt[n] = x
            else:
                rope_opt[n] = int(x)
    return dict(rope=rope_opt, mask=mask or None,
                window=tuple(window) if window else None,
                softcap=softcap or None, alibi=alibi or None, scale=scale or None,
                gate_block=gate_block or None, tile_options=tile_options or None)
