// Early-return helpers for absl::Status / absl::StatusOr on fallible paths.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define HR_STATUS_CONCAT_INNER(a, b) a##b
#define HR_STATUS_CONCAT(a, b) HR_STATUS_CONCAT_INNER(a, b)

// HR_RETURN_IF_ERROR(expr): returns the status of `expr` when it is not OK.
#define HR_RETURN_IF_ERROR(expr)                        \
  do {                                                  \
    ::absl::Status hr_status_ = (expr);                 \
    if (!hr_status_.ok()) [[unlikely]] return hr_status_; \
  } while (false)

// HR_ASSIGN_OR_RETURN(lhs, expr): evaluates the StatusOr `expr`; returns its status on error,
// otherwise moves the value into `lhs` (which may be a declaration: `auto x`).
#define HR_ASSIGN_OR_RETURN(lhs, expr) \
  HR_ASSIGN_OR_RETURN_IMPL(HR_STATUS_CONCAT(hr_statusor_, __LINE__), lhs, expr)
#define HR_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                             \
  if (!statusor.ok()) [[unlikely]] return std::move(statusor).status(); \
  lhs = std::move(statusor).value()
