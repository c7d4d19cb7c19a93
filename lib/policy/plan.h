// The one JSON form of the plan, the report and the settings (<dbs/plan.h> defines them): the
// protocol, the daemon's journal, the trace and replay all read and write these.
#pragma once

#include <dbs/plan.h>

#include <nlohmann/json.hpp>

#include "lib/common/fields.h"

namespace dbs::policy {

// The JSON forms. Epochs count from 1 in JSON. The readers are strict (every field present, of
// its type and range; a plan's sizes agree, sum to its global batch and its offsets follow from
// them) and throw FieldError naming the field; fields they do not know are ignored.
nlohmann::json to_json(const Plan& plan);
Plan plan_from_json(const Fields& fields);
nlohmann::json to_json(const Report& report);
Report report_from_json(const Fields& fields);
nlohmann::json to_json(const Settings& settings);
// rebalance_every may be absent (0): journals and traces written before it was a setting.
// average_every and average_after_epochs are written when averaging is on, a plan's
// exchange_epoch_s when known (> 0); each is read as 0 when absent.
Settings settings_from_json(const Fields& fields);

}  // namespace dbs::policy
