"""Mapping expressions: the layout language of furiosa-opt (see README.md in this folder)."""

from furiosa_opt.mapping.evaluate import Cell
from furiosa_opt.mapping.expr import Axis, Mapping, MappingError, axes
from furiosa_opt.mapping.factors import PadKind
from furiosa_opt.mapping.parse import MappingSyntaxError, m

__all__ = ["Axis", "Cell", "Mapping", "MappingError", "MappingSyntaxError", "PadKind", "axes", "m"]
