"""Vector Engine examples: a row-wise softmax and an RMSNorm over f32 rows, one row per slice."""
