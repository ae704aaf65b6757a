// Reporters receive the runners' reports (tvie/run.hpp): numbers and enums, never preformatted strings. One
// overload per report; a reporter that has nothing to say about a report kind inherits the no-op.
#pragma once

#include <ostream>
#include <string>

#include <tvie/run.hpp>

namespace tvie {

inline constexpr int kReportSchemaVersion = 1;

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void report(const CompareReport& report) = 0;
  virtual void report(const TrainReport& report) = 0;
  virtual void report(const ServeReport& report) = 0;
  virtual void report(const InferReport& report) = 0;
  virtual void report(const DecodeReport& report) = 0;
  virtual void report(const AllreduceReport& report) = 0;
  virtual void report(const MaxBatchReport& report) = 0;
  virtual void report(const SliceReport& report) = 0;
  virtual void report(const CardsReport& report) = 0;
  virtual void report(const PlanReport& report) = 0;
};

// The side-by-side table.
class ConsoleReporter : public Reporter {
 public:
  explicit ConsoleReporter(std::ostream& out) : out_(out) {}
  void report(const CompareReport& report) override;
  void report(const TrainReport& report) override;
  void report(const ServeReport& report) override;
  void report(const InferReport& report) override;
  void report(const DecodeReport& report) override;
  void report(const AllreduceReport& report) override;  // the all_reduce_perf table
  void report(const MaxBatchReport& report) override;
  void report(const SliceReport& report) override;
  void report(const CardsReport& report) override;
  void report(const PlanReport& report) override;

 private:
  std::ostream& out_;
};

// The JSON report (schema in docs/metrics.md), written atomically: a temporary file, then rename.
class JsonReporter : public Reporter {
 public:
  explicit JsonReporter(std::string path) : path_(std::move(path)) {}
  void report(const CompareReport& report) override;
  void report(const TrainReport& report) override;
  void report(const ServeReport& report) override;
  void report(const InferReport& report) override;
  void report(const DecodeReport& report) override;
  void report(const AllreduceReport& report) override;
  void report(const MaxBatchReport& report) override;
  void report(const SliceReport& report) override;
  void report(const CardsReport& report) override;
  void report(const PlanReport& report) override;

 private:
  std::string path_;
};

// CSV of the reports' tables (one header row, units in the column names), written atomically: compare and train
// the memory ledger (one row per category, measured and predicted bytes), infer the sweep's rows, serve and
// decode their latency statistics, max-batch its probes, allreduce its rows, cards the catalog, plan its cards.
// Slice reports throw InvalidArgument("csv", ...): they are several tables (use --json).
class CsvReporter : public Reporter {
 public:
  explicit CsvReporter(std::string path) : path_(std::move(path)) {}
  void report(const CompareReport& report) override;
  void report(const TrainReport& report) override;
  void report(const ServeReport& report) override;
  void report(const InferReport& report) override;
  void report(const DecodeReport& report) override;
  void report(const AllreduceReport& report) override;
  void report(const MaxBatchReport& report) override;
  void report(const SliceReport& report) override;
  void report(const CardsReport& report) override;
  void report(const PlanReport& report) override;

 private:
  std::string path_;
};

// The HTML report: one self-contained page (inline SVG charts, CSS and a check script; nothing fetched) with the
// report's charts (the ledger measured and predicted, memory over time, phases, latency distributions, sweep
// curves, bandwidth, projected intervals), its CSV table and the run's context in a footer. Written atomically.
class HtmlReporter : public Reporter {
 public:
  explicit HtmlReporter(std::string path) : path_(std::move(path)) {}
  void report(const CompareReport& report) override;
  void report(const TrainReport& report) override;
  void report(const ServeReport& report) override;
  void report(const InferReport& report) override;
  void report(const DecodeReport& report) override;
  void report(const AllreduceReport& report) override;
  void report(const MaxBatchReport& report) override;
  void report(const SliceReport& report) override;
  void report(const CardsReport& report) override;
  void report(const PlanReport& report) override;

 private:
  std::string path_;
};

std::string to_html_string(const CompareReport& report);
std::string to_html_string(const TrainReport& report);
std::string to_html_string(const ServeReport& report);
std::string to_html_string(const InferReport& report);
std::string to_html_string(const DecodeReport& report);
std::string to_html_string(const AllreduceReport& report);
std::string to_html_string(const MaxBatchReport& report);
std::string to_html_string(const SliceReport& report);
std::string to_html_string(const CardsReport& report);
std::string to_html_string(const PlanReport& report);

// Two of the report's charts as standalone SVG files (what --html embeds; either argument may be nullptr): the
// ledger as stacked bars, measured beside predicted, and memory over time through one training step beside one
// inference batch, the step's phases shaded.
std::string ledger_svg(const TrainingResult* training, const InferenceResult* inference);
std::string memory_timeline_svg(const TrainingResult* training, const InferenceResult* inference);

std::string to_json_string(const CompareReport& report, int indent = 2);
std::string to_json_string(const TrainReport& report, int indent = 2);
std::string to_json_string(const ServeReport& report, int indent = 2);
std::string to_json_string(const InferReport& report, int indent = 2);
std::string to_json_string(const DecodeReport& report, int indent = 2);
std::string to_json_string(const AllreduceReport& report, int indent = 2);
std::string to_json_string(const MaxBatchReport& report, int indent = 2);
std::string to_json_string(const SliceReport& report, int indent = 2);
std::string to_json_string(const CardsReport& report, int indent = 2);
std::string to_json_string(const PlanReport& report, int indent = 2);
std::string to_csv_string(const CompareReport& report);
std::string to_csv_string(const TrainReport& report);
std::string to_csv_string(const InferReport& report);
std::string to_csv_string(const ServeReport& report);
std::string to_csv_string(const DecodeReport& report);
// The max-batch probes, one line each: mode,batch,fits,peak_bytes.
std::string to_csv_string(const MaxBatchReport& report);
// The all-reduce rows flat, one line a message size, with a header line (no trailing newline).
std::string to_csv_string(const AllreduceReport& report);
// The cards, one line each, units in the column names (empty cell: not published).
std::string to_csv_string(const CardsReport& report);
// The plan, one line per card: training and inference figures, units in the column names, "projected" in each.
std::string to_csv_string(const PlanReport& report);

// Throws InvalidArgument(field, path, ...) unless `path` names a file that can be created or replaced.
// Creates nothing.
void check_output_path(const std::string& path, const std::string& field);
// Writes `content` to `path` through a temporary file in the same directory and a rename, so that a
// reader never sees half a file. Throws tvie::Error when it cannot.
void write_file_atomically(const std::string& path, const std::string& content);

// "1.50 MiB" style, binary units.
std::string format_bytes(int64_t bytes);

}  // namespace tvie
