// The parts of the JSON reports that the run reports and the projection's share (report_json.cpp,
// report_json_plan.cpp).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include <tvie/report.hpp>

namespace tvie::json_parts {

// Every predicted category (-1: not predicted), and the saved activations by layer type.
nlohmann::json predicted_json(const PredictedTrainingMemory& p);
nlohmann::json predicted_json(const PredictedInferenceMemory& p);
nlohmann::json summary_json(const Summary& s);
nlohmann::json context_json(const RunContext& c);
nlohmann::json model_json(const std::string& name, const ModelFacts& f);
// The head every report shares: its schema version, the run's context and the model's facts.
nlohmann::json report_head(const RunContext& context, const std::string& workload, const ModelFacts& facts);

}  // namespace tvie::json_parts
