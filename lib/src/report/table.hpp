// A report's table, as the CSV writes it and the HTML page shows it under its charts: one model, so that the two
// cannot disagree. Columns carry their units in their names (docs/reports.md, "CSV"); cells are the figures already
// written as text, an empty cell where a figure does not apply.
#pragma once

#include <string>
#include <vector>

#include <tvie/report.hpp>

namespace tvie::detail {

struct Column {
  std::string name;
  bool text = false;  // free text (a name, a source, an explanation): in double quotes in the CSV
};

struct Table {
  std::vector<Column> columns;
  std::vector<std::vector<std::string>> rows;  // each as many cells as there are columns
};

// The columns of these names, in order; those named in `text` hold free text.
std::vector<Column> columns_of(const std::vector<std::string>& names, const std::vector<std::string>& text = {});

// RFC 4180: the header, then a line per row; text cells in double quotes, their quotes doubled.
std::string csv_of(const Table& table);

// The table of each report that is one table (every kind but SliceReport, which is several: --json).
Table table_of(const CompareReport& report);
Table table_of(const TrainReport& report);
Table table_of(const InferReport& report);
Table table_of(const ServeReport& report);
Table table_of(const DecodeReport& report);
Table table_of(const MaxBatchReport& report);
Table table_of(const AllreduceReport& report);
Table table_of(const CardsReport& report);
Table table_of(const PlanReport& report);
Table table_of(const ZooReport& report);
// compare --aoti: the inference batch eager and compiled, one row each (the HTML page's; the CSV is the ledger).
Table compiled_table(const CompareReport& report);

}  // namespace tvie::detail
