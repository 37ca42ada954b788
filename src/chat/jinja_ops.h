// Python's operators on template values: int and float arithmetic kept
// apart (7 // 2 is 3, 7 / 2 is 3.5), floor division and modulo rounding
// toward negative infinity, + and * on strings and lists, comparisons and `in`.
#pragma once

#include "base/result.h"
#include "chat/jinja_ast.h"
#include "chat/jinja_value.h"

namespace quip::chat::jinja {

class Evaluator;

// Neg and Pos (Not is plain truthiness).
Result<Value> unary_op(UnaryOp op, const Value& v);
// Arithmetic and ~; And/Or are the evaluator's (they short-circuit).
Result<Value> binary_op(Evaluator& ev, BinaryOp op, const Value& a, const Value& b);
Result<bool> compare_op(Evaluator& ev, CompareOp op, const Value& a, const Value& b);
// Python's `item in container`.
Result<bool> contains(const Value& container, const Value& item);

}  // namespace quip::chat::jinja
