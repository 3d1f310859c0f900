// TensorBoard's smoothing: a debiased exponential moving average. Points that are not finite
// (gaps) are passed through; a constant line stays as it is. Used by the charts page, and by
// the tests under node (module.exports).
"use strict";

function smooth(values, weight) {
  const finite = values.filter((value) => Number.isFinite(value));
  const constant = finite.every((value) => value === finite[0]);
  let last = 0;
  let accumulated = 0;
  return values.map((value) => {
    if (constant || !Number.isFinite(value)) return value;
    last = last * weight + (1 - weight) * value;
    accumulated += 1;
    const debias = weight === 1 ? 1 : 1 - Math.pow(weight, accumulated);
    return last / debias;
  });
}

if (typeof module !== "undefined") module.exports = { smooth };
else window.OctotrainSmoothing = { smooth };
