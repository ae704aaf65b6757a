// Inline SVG charts for the HTML report: line charts (curves, CDFs, the memory timeline with its phases shaded),
// stacked bar charts (the ledger) and interval charts (projected bound .. estimate). Each chart is an
// <svg class="chart" data-chart="ID" data-series-count="N"> whose every series is an element with class
// "series" and data-series="its name", so that a test can check what a chart shows from the DOM alone.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace tvie::svg {

enum class Format { number, bytes, milliseconds };

struct Axis {
  Axis() = default;
  Axis(std::string label_, bool log_ = false, Format format_ = Format::number)
      : label(std::move(label_)), log(log_), format(format_) {}
  std::string label;  // with its unit: "batch latency (ms)"
  bool log = false;   // log10 scale (every value must be > 0)
  Format format = Format::number;
  double min = std::numeric_limits<double>::quiet_NaN();  // NaN: from the data (0 for a linear axis)
  double max = std::numeric_limits<double>::quiet_NaN();
};

enum class Style {
  line,    // straight segments
  step,    // hold each y until the next x (memory over time, CDFs)
  dots,    // straight segments and a dot at each point
  dashed,  // a dashed line: a bound, a limit
};

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y) in x order
  Style style = Style::line;
};

struct VerticalMarker {  // a labelled vertical line: p50, p99
  double x = 0;
  std::string label;
};

struct Band {  // a shaded x range with a label at its top: a phase of the step
  double x0 = 0, x1 = 0;
  std::string label;
};

struct Cross {  // an X at a point: "does not fit"
  double x = 0, y = 0;
  std::string label;
};

struct LineChart {
  LineChart(std::string id_, std::string title_, Axis x_, Axis y_)
      : id(std::move(id_)), title(std::move(title_)), x(std::move(x_)), y(std::move(y_)) {}
  std::string id, title;
  Axis x, y;
  std::vector<Series> series;
  std::vector<VerticalMarker> markers;
  std::vector<Band> bands;
  std::vector<Cross> crosses;
};

struct Segment {
  std::string category;  // the series: one colour per category across bars
  double value = 0;
};
struct Bar {
  std::string label;
  std::vector<Segment> segments;  // stacked left to right
  std::string note;               // after the bar: "predicted", "does not fit"
};
struct BarChart {
  BarChart(std::string id_, std::string title_, Axis value_)
      : id(std::move(id_)), title(std::move(title_)), value(std::move(value_)) {}
  std::string id, title;
  Axis value;
  std::vector<Bar> bars;
};

struct Interval {
  std::string label;
  double low = 0, high = 0;  // low > high is drawn as low..low
  std::string note;          // when there is no interval: "no bf16 peak"
};
struct IntervalChart {
  IntervalChart(std::string id_, std::string title_, Axis value_, std::string series_)
      : id(std::move(id_)), title(std::move(title_)), value(std::move(value_)), series(std::move(series_)) {}
  std::string id, title;
  Axis value;
  std::string series;  // the one series' name
  std::vector<Interval> rows;
};

std::string render(const LineChart& chart);
std::string render(const BarChart& chart);
std::string render(const IntervalChart& chart);

std::string escape(const std::string& text);               // XML/HTML text and attribute values
std::string format_value(double value, Format format);     // tick labels: "1.5 GiB", "12 ms", "2.5k"
std::vector<double> linear_ticks(double lo, double hi);    // about five round values covering [lo, hi]
std::vector<double> log_ticks(double lo, double hi);       // 1, 2, 5 x powers of ten within [lo, hi]
std::vector<double> log_byte_ticks(double lo, double hi);  // powers of two within [lo, hi], every 1, 2, 5 or 10
const char* colour(size_t index);                          // a fixed palette, cycled

}  // namespace tvie::svg
