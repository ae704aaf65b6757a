// Reporters receive the runners' reports (tvie/run.hpp): numbers and enums, never preformatted strings. One
// overload per report; a reporter that has nothing to say about a report kind inherits the no-op.
#pragma once

#include <ostream>
#include <string>

#include <tvie/errors.hpp>
#include <tvie/output_files.hpp>
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
  virtual void report(const ZooReport& report) = 0;
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
  void report(const ZooReport& report) override;

 private:
  std::ostream& out_;
};

// --- the files: each report rendered by a format's to_X_string, then written atomically ---

// The JSON report (schema in docs/metrics.md).
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
std::string to_json_string(const ZooReport& report, int indent = 2);

// CSV of the reports that are one table (one header row, units in the column names): compare and train the memory
// ledger (one row per category, measured and predicted bytes), infer the sweep's rows, serve and decode their
// latency statistics, max-batch its probes (mode,batch,fits,peak_bytes,seconds), allreduce its rows, cards the
// catalog (an empty cell: not published), plan its cards ("projected" in each), list the zoo's presets. A slice
// report is several tables and has no CSV (renders<CsvFormat, SliceReport> is false; use JSON).
std::string to_csv_string(const CompareReport& report);
std::string to_csv_string(const TrainReport& report);
std::string to_csv_string(const InferReport& report);
std::string to_csv_string(const ServeReport& report);
std::string to_csv_string(const DecodeReport& report);
std::string to_csv_string(const MaxBatchReport& report);
std::string to_csv_string(const AllreduceReport& report);
std::string to_csv_string(const CardsReport& report);
std::string to_csv_string(const PlanReport& report);
std::string to_csv_string(const ZooReport& report);

// The HTML report: one self-contained page (inline SVG charts, CSS and a check script; nothing fetched) with the
// report's charts (the ledger measured and predicted, memory over time, phases, latency distributions, sweep
// curves, bandwidth, projected intervals), its CSV table and the run's context in a footer.
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
std::string to_html_string(const ZooReport& report);

// A Chrome trace-event file (JSON; opens in Perfetto and chrome://tracing): the timed training steps, each phase
// a slice, and the timed inference batches, each run on its own track ("process") with its own time origin: the
// first timed step or batch at 0, on the timer's clock (CUDA events on a GPU, so device times; the host's steady
// clock on the CPU). compare, train (data-parallel: one track per rank, each rank's buckets' all-reduces on a second
// row) and infer (one track per row); the other reports have no timed steps of one model and no trace.
std::string to_trace_string(const CompareReport& report);
std::string to_trace_string(const TrainReport& report);
std::string to_trace_string(const InferReport& report);

// A format renders the reports its to_X_string has an overload for; renders<Format, Report> says whether it does,
// at compile time, and `accepted` what a user may ask of it.
struct JsonFormat {
  static constexpr const char* name = "json";
  static constexpr const char* accepted = "every report";
  template <typename Report>
  requires requires(const Report& r) { to_json_string(r); }
  static std::string render(const Report& r) { return to_json_string(r); }
};
struct CsvFormat {
  static constexpr const char* name = "csv";
  static constexpr const char* accepted = "a report that is one table (not slices: use JSON)";
  template <typename Report>
  requires requires(const Report& r) { to_csv_string(r); }
  static std::string render(const Report& r) { return to_csv_string(r); }
};
struct HtmlFormat {
  static constexpr const char* name = "html";
  static constexpr const char* accepted = "every report";
  template <typename Report>
  requires requires(const Report& r) { to_html_string(r); }
  static std::string render(const Report& r) { return to_html_string(r); }
};
struct TraceFormat {
  static constexpr const char* name = "trace";
  static constexpr const char* accepted = "compare, train or infer reports (the others have no timed steps to trace)";
  template <typename Report>
  requires requires(const Report& r) { to_trace_string(r); }
  static std::string render(const Report& r) { return to_trace_string(r); }
};
template <typename Format, typename Report>
inline constexpr bool renders = requires(const Report& r) {
  Format::render(r);
};

// Writes every report to `path` as `Format::render(report)` renders it, and a newline, atomically
// (write_file_atomically). A report the format does not render is refused before anything is written:
// InvalidArgument(Format::name, the report's kind, Format::accepted).
template <typename Format>
class FileReporter final : public Reporter {
 public:
  explicit FileReporter(std::string path) : path_(std::move(path)) {}
  void report(const CompareReport& report) override { write(report); }
  void report(const TrainReport& report) override { write(report); }
  void report(const ServeReport& report) override { write(report); }
  void report(const InferReport& report) override { write(report); }
  void report(const DecodeReport& report) override { write(report); }
  void report(const AllreduceReport& report) override { write(report); }
  void report(const MaxBatchReport& report) override { write(report); }
  void report(const SliceReport& report) override { write(report); }
  void report(const CardsReport& report) override { write(report); }
  void report(const PlanReport& report) override { write(report); }
  void report(const ZooReport& report) override { write(report); }

 private:
  template <typename Report>
  void write(const Report& report) {
    if constexpr (renders<Format, Report>)
      write_file_atomically(path_, Format::render(report) + "\n");
    else
      throw InvalidArgument(Format::name, Report::kind, Format::accepted);
  }
  std::string path_;
};

using JsonReporter = FileReporter<JsonFormat>;
using CsvReporter = FileReporter<CsvFormat>;
using HtmlReporter = FileReporter<HtmlFormat>;
using TraceReporter = FileReporter<TraceFormat>;

// Two of the report's charts as standalone SVG files (what --html embeds; either argument may be nullptr): the
// ledger as stacked bars, measured beside predicted, and memory over time through one training step beside one
// inference batch, the step's phases shaded.
std::string ledger_svg(const TrainingResult* training, const InferenceResult* inference);
std::string memory_timeline_svg(const TrainingResult* training, const InferenceResult* inference);

// "1.50 MiB" style, binary units.
std::string format_bytes(int64_t bytes);

}  // namespace tvie
