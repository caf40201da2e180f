"""What each backend can run, declared before anyone calls it: its capability table.

A table has a cell per operation, dtype, layout and number of spatial axes, each answered "yes" or
"no: reason". The operations are finer than the Backend methods: a convolution forward with each
activation fused after it, and each activation's forward and backward, are rows of their own
(`OPERATIONS`). A backend declares its table through an optional method,
``capability(operation, dtype, layout, spatial) -> str | None`` (None: it runs that cell; else why not),
a pure function of its arguments: it needs no GPU and no cuDNN, so ``cudnnload backends --json`` lists
every table on any machine. The backends' ``supports()`` consult the same function first (`refusal`),
so a call the table rules out is refused with the table's reason; what only cuDNN can tell (an odd
stride, a problem no engine runs) is decided after that, per problem.

Activations are elementwise: their rows do not vary by layout or spatial axes, and a call is looked up
in the NCHW, 2-D column (`cell_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cudnnload.dispatch.tensors import DTYPES, TensorRef

# cudnnActivationMode_t, in its order: SIGMOID=0 ... SWISH=6 (cudnn-facts §4.3; cudnnload.loading.capi.ActivationMode).
ACTIVATIONS = ("sigmoid", "relu", "tanh", "clipped_relu", "elu", "identity", "swish")
# Axis order of x, w and y: "NCHW" is (N, C, *spatial) and "NHWC" (N, *spatial, C).
LAYOUTS = ("NCHW", "NHWC")
SPATIAL = (1, 2, 3)  # spatial axes of a convolution: 1-D, 2-D, 3-D
OPERATIONS = ("conv_forward", *(f"conv_forward+{mode}" for mode in ACTIVATIONS), "conv_backward_data",
              "conv_backward_filter", *(f"activation_forward:{mode}" for mode in ACTIVATIONS),
              *(f"activation_backward:{mode}" for mode in ACTIVATIONS))

Rule = Callable[[str, str, str, int], "str | None"]  # (operation, dtype, layout, spatial) -> None or why not


@dataclass(frozen=True)
class Cell:
    """One cell of a backend's table: ``answer`` is "yes" or "no: <reason>"."""

    operation: str  # one of OPERATIONS
    dtype: str  # one of cudnnload.dispatch.tensors.DTYPES
    layout: str  # one of LAYOUTS
    spatial: int  # one of SPATIAL
    answer: str

    @property
    def runs(self) -> bool:
        return self.answer == "yes"

    @property
    def reason(self) -> str | None:
        """Why not, for a "no" cell."""
        return None if self.runs else self.answer.removeprefix("no: ")


def table(rule: Rule) -> tuple[Cell, ...]:
    """Every cell of the table ``rule`` answers, in OPERATIONS, DTYPES, LAYOUTS, SPATIAL order."""
    cells = []
    for operation in OPERATIONS:
        for dtype in DTYPES:
            for layout in LAYOUTS:
                for spatial in SPATIAL:
                    why = rule(operation, dtype, layout, spatial)
                    cells.append(Cell(operation, dtype, layout, spatial, "yes" if why is None else f"no: {why}"))
    return tuple(cells)


def operation_of(op: str, activation: str | None = None) -> str:
    """The table's row for a call of the Backend method ``op`` (a convolution's fused activation, or the
    activation's mode)."""
    if op.startswith("activation_"):
        return f"{op}:{activation}"
    if op == "conv_forward" and activation is not None:
        return f"conv_forward+{activation}"
    return op


def cell_of(op: str, activation: str | None, layout: str, tensors: Sequence[TensorRef | None]
            ) -> tuple[str, str, str, int]:
    """The (operation, dtype, layout, spatial) a call is looked up under: the first tensor's dtype; for a
    convolution its layout and spatial axes, for an activation (elementwise) the NCHW 2-D column."""
    first = next(t for t in tensors if t is not None)
    if op.startswith("activation_"):
        return operation_of(op, activation), first.dtype, "NCHW", 2
    return operation_of(op, activation), first.dtype, layout, len(first.shape) - 2


def refusal(rule: Rule, op: str, activation: str | None, layout: str, tensors: Sequence[TensorRef | None]
            ) -> str | None:
    """Why ``rule``'s table rules this call out, or None."""
    return rule(*cell_of(op, activation, layout, tensors))
