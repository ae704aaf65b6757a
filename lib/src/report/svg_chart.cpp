// Inline SVG charts (svg_chart.hpp): plain text, no script, no external resource.
#include "report/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include <tvie/errors.hpp>

#include "core/text.hpp"

namespace tvie::svg {
namespace {

constexpr double kWidth = 760, kLeft = 86, kRight = 24, kTop = 62, kBottom = 52;
constexpr double kLineHeight = 320;

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

struct Scale {
  double lo = 0, hi = 1, a = 0, b = 1;  // data range -> pixel range [a, b]
  bool log = false;
  double operator()(double v) const {
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return a + t * (b - a);
  }
};

// A logarithmic byte axis ticks every `step` powers of two, aligned to multiples of it, so that the labels are round
// binary sizes: 1 B, 32 B, 1 KiB, 32 KiB, 1 MiB at 5 octaves a step; the step keeps the ticks to about nine.
double byte_octave_step(double octaves) {
  for (double step : {1.0, 2.0, 5.0, 10.0})
    if (octaves / step <= 8) return step;
  return 10.0;
}

// Byte axes tick at round numbers of the largest binary unit the range reaches (KiB, MiB, GiB).
double byte_unit(double hi) {
  double unit = 1;
  while (unit * 1024 <= std::fabs(hi) && unit < 1024.0 * 1024 * 1024 * 1024) unit *= 1024;
  return unit;
}

std::vector<double> ticks_of(const Axis& axis, double lo, double hi) {
  if (axis.log) return axis.format == Format::bytes ? log_byte_ticks(lo, hi) : log_ticks(lo, hi);
  if (axis.format != Format::bytes) return linear_ticks(lo, hi);
  const double unit = byte_unit(std::max(std::fabs(lo), std::fabs(hi)));
  auto ticks = linear_ticks(lo / unit, hi / unit);
  for (double& t : ticks) t *= unit;
  return ticks;
}

// The axis range from the data: a linear axis starts at 0 unless the data go below or a minimum is set; a log
// axis spans whole 1-2-5 steps around the data.
std::pair<double, double> range(const Axis& axis, double data_lo, double data_hi) {
  if (!(data_lo <= data_hi)) data_lo = data_hi = axis.log ? 1 : 0;
  double lo = axis.min, hi = axis.max;
  if (axis.log && axis.format == Format::bytes) {
    // The powers of two around the data; the ticks within are whole binary sizes (see log_byte_ticks).
    if (std::isnan(lo)) lo = std::exp2(std::floor(std::log2(std::max(data_lo, 1.0))));
    if (std::isnan(hi)) hi = std::exp2(std::ceil(std::log2(std::max(data_hi, 1.0))));
    if (hi <= lo) hi = lo * 2;
  } else if (axis.log) {
    if (std::isnan(lo)) lo = std::pow(10.0, std::floor(std::log10(std::max(data_lo, 1e-300))));
    if (std::isnan(hi)) hi = std::pow(10.0, std::ceil(std::log10(std::max(data_hi, 1e-300))));
    if (hi <= lo) hi = lo * 10;
  } else {
    if (std::isnan(lo)) lo = std::min(0.0, data_lo);
    if (std::isnan(hi)) hi = data_hi;
    if (hi <= lo) hi = lo + (lo == 0 ? 1 : std::fabs(lo));
    const auto ticks = ticks_of(axis, lo, hi);
    if (std::isnan(axis.max)) hi = std::max(hi, ticks.back());
    if (std::isnan(axis.min)) lo = std::min(lo, ticks.front());
  }
  return {lo, hi};
}

void open_svg(std::ostringstream& o, const std::string& id, const std::string& title, double height,
              size_t series_count) {
  o << "<svg class=\"chart\" data-chart=\"" << escape(id) << "\" data-series-count=\"" << series_count
    << "\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << num(kWidth) << ' ' << num(height) << "\" width=\""
    << num(kWidth) << "\" height=\"" << num(height) << "\" role=\"img\" aria-label=\"" << escape(title)
    << "\" font-family=\"system-ui, sans-serif\" font-size=\"11\">\n";  // also outside the page's CSS
  o << "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  o << "<title>" << escape(title) << "</title>\n";
  o << "<text class=\"chart-title\" x=\"" << num(kLeft) << "\" y=\"20\" font-size=\"13\" font-weight=\"600\">"
    << escape(title) << "</text>\n";
}

void legend(std::ostringstream& o, const std::vector<std::string>& names, const std::vector<bool>& dashed = {}) {
  double x = kLeft, y = 40;
  for (size_t i = 0; i < names.size(); ++i) {
    const double w = 30 + 6.6 * static_cast<double>(names[i].size());
    if (x + w > kWidth - kRight && x > kLeft) {
      x = kLeft;
      y += 15;
    }
    o << "<g class=\"legend-item\"><line x1=\"" << num(x) << "\" y1=\"" << num(y - 4) << "\" x2=\"" << num(x + 18)
      << "\" y2=\"" << num(y - 4) << "\" stroke=\"" << colour(i) << "\" stroke-width=\"6\""
      << (i < dashed.size() && dashed[i] ? " stroke-dasharray=\"4 3\"" : "") << "/><text x=\"" << num(x + 23)
      << "\" y=\"" << num(y) << "\">" << escape(names[i]) << "</text></g>\n";
    x += w;
  }
}

void x_axis(std::ostringstream& o, const Axis& axis, const Scale& s, double y0, double top) {
  o << "<g class=\"axis x-axis\">\n";
  o << "<line x1=\"" << num(s.a) << "\" y1=\"" << num(y0) << "\" x2=\"" << num(s.b) << "\" y2=\"" << num(y0)
    << "\" stroke=\"#444\"/>\n";
  for (double t : ticks_of(axis, s.lo, s.hi)) {
    const double x = s(t);
    o << "<line x1=\"" << num(x) << "\" y1=\"" << num(top) << "\" x2=\"" << num(x) << "\" y2=\"" << num(y0)
      << "\" stroke=\"#e4e4e4\"/>";
    o << "<text x=\"" << num(x) << "\" y=\"" << num(y0 + 16) << "\" text-anchor=\"middle\">"
      << escape(format_value(t, axis.format)) << "</text>\n";
  }
  o << "<text class=\"axis-label\" x=\"" << num((s.a + s.b) / 2) << "\" y=\"" << num(y0 + 38)
    << "\" text-anchor=\"middle\">" << escape(axis.label) << "</text>\n</g>\n";
}

void y_axis(std::ostringstream& o, const Axis& axis, const Scale& s, double x0, double right) {
  o << "<g class=\"axis y-axis\">\n";
  o << "<line x1=\"" << num(x0) << "\" y1=\"" << num(s.a) << "\" x2=\"" << num(x0) << "\" y2=\"" << num(s.b)
    << "\" stroke=\"#444\"/>\n";
  for (double t : ticks_of(axis, s.lo, s.hi)) {
    const double y = s(t);
    o << "<line x1=\"" << num(x0) << "\" y1=\"" << num(y) << "\" x2=\"" << num(right) << "\" y2=\"" << num(y)
      << "\" stroke=\"#e4e4e4\"/>";
    o << "<text x=\"" << num(x0 - 6) << "\" y=\"" << num(y + 4) << "\" text-anchor=\"end\">"
      << escape(format_value(t, axis.format)) << "</text>\n";
  }
  o << "<text class=\"axis-label\" transform=\"translate(14 " << num((s.a + s.b) / 2)
    << ") rotate(-90)\" text-anchor=\"middle\">" << escape(axis.label) << "</text>\n</g>\n";
}

}  // namespace

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_value(double v, Format format) {
  char b[48];
  switch (format) {
    case Format::bytes: {
      static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
      int u = 0;
      while (std::fabs(v) >= 1024 && u < 4) v /= 1024, ++u;
      std::snprintf(b, sizeof b, "%.4g %s", v, units[u]);
      return b;
    }
    case Format::milliseconds:
      if (std::fabs(v) >= 1000) {
        std::snprintf(b, sizeof b, "%.4g s", v / 1000);
      } else {
        std::snprintf(b, sizeof b, "%.4g ms", v);
      }
      return b;
    case Format::number:
      if (std::fabs(v) >= 1e9) {
        std::snprintf(b, sizeof b, "%.4gG", v / 1e9);
      } else if (std::fabs(v) >= 1e6) {
        std::snprintf(b, sizeof b, "%.4gM", v / 1e6);
      } else if (std::fabs(v) >= 1e4) {
        std::snprintf(b, sizeof b, "%.4gk", v / 1e3);
      } else {
        std::snprintf(b, sizeof b, "%.4g", v);
      }
      return b;
  }
  return "";
}

std::vector<double> linear_ticks(double lo, double hi) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::floor(lo / step) * step; t <= hi + step * 0.999; t += step) ticks.push_back(t == 0 ? 0 : t);
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> ticks;
  if (!(lo > 0) || !(hi > lo)) return {lo};
  const bool many_decades = std::log10(hi / lo) > 4;
  for (double decade = std::pow(10.0, std::floor(std::log10(lo))); decade <= hi; decade *= 10)
    for (double m : many_decades ? std::vector<double>{1} : std::vector<double>{1, 2, 5})
      if (m * decade >= lo * 0.999 && m * decade <= hi * 1.001) ticks.push_back(m * decade);
  return ticks;
}

std::vector<double> log_byte_ticks(double lo, double hi) {
  if (!(lo > 0) || !(hi > lo)) return {lo};
  const double e_lo = std::ceil(std::log2(lo) - 1e-9), e_hi = std::floor(std::log2(hi) + 1e-9);
  const double step = byte_octave_step(e_hi - e_lo);
  std::vector<double> ticks;
  for (double e = std::ceil(e_lo / step) * step; e <= e_hi; e += step) ticks.push_back(std::exp2(e));
  return ticks;
}

const char* colour(size_t index) {
  static const char* palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                  "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};
  return palette[index % (sizeof palette / sizeof palette[0])];
}

std::string render(const LineChart& c) {
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  auto see = [&](double x, double y) {
    x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x), y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
  };
  for (const auto& s : c.series)
    for (const auto& [x, y] : s.points) see(x, y);
  for (const auto& cross : c.crosses) see(cross.x, cross.y);
  for (const auto& b : c.bands) x_lo = std::min(x_lo, b.x0), x_hi = std::max(x_hi, b.x1);
  const double bottom = kLineHeight - kBottom;
  const auto [xa, xb] = range(c.x, x_lo, x_hi);
  const auto [ya, yb] = range(c.y, y_lo, y_hi);
  const Scale sx{xa, xb, kLeft, kWidth - kRight, c.x.log};
  const Scale sy{ya, yb, bottom, kTop, c.y.log};
  std::ostringstream o;
  open_svg(o, c.id, c.title, kLineHeight, c.series.size());
  std::vector<std::string> names;
  std::vector<bool> dashed;
  for (const auto& s : c.series) names.push_back(s.name), dashed.push_back(s.style == Style::dashed);
  legend(o, names, dashed);
  for (size_t i = 0; i < c.bands.size(); ++i) {
    const auto& b = c.bands[i];
    const double x0 = sx(b.x0), x1 = sx(std::max(b.x1, b.x0));
    o << "<g class=\"band\" data-band=\"" << escape(b.label) << "\"><rect x=\"" << num(x0) << "\" y=\"" << num(kTop)
      << "\" width=\"" << num(std::max(x1 - x0, 0.5)) << "\" height=\"" << num(bottom - kTop) << "\" fill=\""
      << (i % 2 ? "#f2f2f2" : "#e6eef7") << "\"/>";
    if (x1 - x0 > 6.0 * static_cast<double>(b.label.size()))
      o << "<text x=\"" << num((x0 + x1) / 2) << "\" y=\"" << num(kTop + 12)
        << "\" text-anchor=\"middle\" fill=\"#555\">" << escape(b.label) << "</text>";
    o << "</g>\n";
  }
  x_axis(o, c.x, sx, bottom, kTop);
  y_axis(o, c.y, sy, kLeft, kWidth - kRight);
  for (size_t i = 0; i < c.series.size(); ++i) {
    const auto& s = c.series[i];
    o << "<g class=\"series\" data-series=\"" << escape(s.name) << "\" data-points=\"" << s.points.size() << "\">";
    if (!s.points.empty()) {
      o << "<path fill=\"none\" stroke=\"" << colour(i) << "\" stroke-width=\"2\""
        << (s.style == Style::dashed ? " stroke-dasharray=\"6 4\"" : "") << " d=\"";
      for (size_t k = 0; k < s.points.size(); ++k) {
        const double x = sx(s.points[k].first), y = sy(s.points[k].second);
        if (k == 0)
          o << 'M' << num(x) << ' ' << num(y);
        else if (s.style == Style::step)
          o << " H" << num(x) << " V" << num(y);
        else
          o << " L" << num(x) << ' ' << num(y);
      }
      o << "\"/>";
    }
    if (s.style == Style::dots)
      for (const auto& [x, y] : s.points)
        o << "<circle cx=\"" << num(sx(x)) << "\" cy=\"" << num(sy(y)) << "\" r=\"3\" fill=\"" << colour(i) << "\"/>";
    o << "</g>\n";
  }
  for (size_t k = 0; k < c.markers.size(); ++k) {  // labels staggered: percentiles often sit close together
    const auto& m = c.markers[k];
    const double x = sx(m.x);
    o << "<g class=\"marker\"><line x1=\"" << num(x) << "\" y1=\"" << num(kTop) << "\" x2=\"" << num(x) << "\" y2=\""
      << num(bottom) << "\" stroke=\"#333\" stroke-dasharray=\"3 3\"/><text x=\"" << num(x + 3) << "\" y=\""
      << num(kTop + 24 + 13 * static_cast<double>(k % 6)) << "\">" << escape(m.label) << "</text></g>\n";
  }
  for (const auto& cross : c.crosses) {
    const double x = sx(cross.x), y = sy(cross.y);
    o << "<g class=\"cross\"><title>" << escape(cross.label) << "</title><path d=\"M" << num(x - 5) << ' ' << num(y - 5)
      << " L" << num(x + 5) << ' ' << num(y + 5) << " M" << num(x - 5) << ' ' << num(y + 5) << " L" << num(x + 5) << ' '
      << num(y - 5) << "\" stroke=\"#b00\" stroke-width=\"2\"/><text x=\"" << num(x + 7) << "\" y=\"" << num(y - 6)
      << "\" fill=\"#b00\">" << escape(cross.label) << "</text></g>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string render(const BarChart& c) {
  constexpr double kRow = 30, kLabel = 230;
  std::vector<std::string> categories;
  double total_max = 0;
  for (const auto& bar : c.bars) {
    double total = 0;
    for (const auto& s : bar.segments) {
      if (std::find(categories.begin(), categories.end(), s.category) == categories.end())
        categories.push_back(s.category);
      total += std::max(0.0, s.value);
    }
    total_max = std::max(total_max, total);
  }
  const double legend_rows = std::ceil(static_cast<double>(categories.size()) / 5.0);
  const double top = kTop + 15 * std::max(0.0, legend_rows - 1);
  const double height = top + kRow * static_cast<double>(c.bars.size()) + kBottom;
  const auto [lo, hi] = range(c.value, 0, total_max);
  const Scale sx{lo, hi, kLabel, kWidth - kRight - 90, false};
  std::ostringstream o;
  open_svg(o, c.id, c.title, height, categories.size());
  legend(o, categories);
  const double bottom = height - kBottom;
  x_axis(o, c.value, sx, bottom, top);
  for (size_t i = 0; i < c.bars.size(); ++i)
    o << "<text class=\"bar-label\" x=\"" << num(kLabel - 8) << "\" y=\"" << num(top + kRow * i + 19)
      << "\" text-anchor=\"end\">" << escape(c.bars[i].label) << "</text>\n";
  for (size_t k = 0; k < categories.size(); ++k) {
    o << "<g class=\"series\" data-series=\"" << escape(categories[k]) << "\">";
    for (size_t i = 0; i < c.bars.size(); ++i) {
      double start = 0;
      for (const auto& s : c.bars[i].segments) {
        if (s.value <= 0) continue;
        if (s.category == categories[k]) {
          o << "<rect x=\"" << num(sx(start)) << "\" y=\"" << num(top + kRow * i + 5) << "\" width=\""
            << num(std::max(sx(start + s.value) - sx(start), 0.5)) << "\" height=\"" << num(kRow - 10) << "\" fill=\""
            << colour(k) << "\"><title>" << escape(c.bars[i].label) << ": " << escape(s.category) << " "
            << escape(format_value(s.value, c.value.format)) << "</title></rect>";
        }
        start += s.value;
      }
    }
    o << "</g>\n";
  }
  for (size_t i = 0; i < c.bars.size(); ++i) {
    double total = 0;
    for (const auto& s : c.bars[i].segments) total += std::max(0.0, s.value);
    o << "<text class=\"bar-total\" x=\"" << num(sx(total) + 5) << "\" y=\"" << num(top + kRow * i + 19) << "\">"
      << escape(format_value(total, c.value.format)) << (c.bars[i].note.empty() ? "" : " " + escape(c.bars[i].note))
      << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string render(const IntervalChart& c) {
  constexpr double kRow = 24, kLabel = 200;
  double lo_data = INFINITY, hi_data = -INFINITY;
  for (const auto& r : c.rows)
    if (r.note.empty()) lo_data = std::min(lo_data, r.low), hi_data = std::max({hi_data, r.high, r.low});
  const double height = kTop + kRow * static_cast<double>(c.rows.size()) + kBottom;
  const auto [lo, hi] = range(c.value, lo_data, hi_data);
  const Scale sx{lo, hi, kLabel, kWidth - kRight, c.value.log};
  std::ostringstream o;
  open_svg(o, c.id, c.title, height, 1);
  legend(o, {c.series});
  const double bottom = height - kBottom;
  x_axis(o, c.value, sx, bottom, kTop);
  o << "<g class=\"series\" data-series=\"" << escape(c.series) << "\">";
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const auto& r = c.rows[i];
    const double y = kTop + kRow * i + kRow / 2;
    o << "<text class=\"bar-label\" x=\"" << num(kLabel - 8) << "\" y=\"" << num(y + 4) << "\" text-anchor=\"end\">"
      << escape(r.label) << "</text>";
    if (!r.note.empty()) {
      o << "<text x=\"" << num(kLabel + 4) << "\" y=\"" << num(y + 4) << "\" fill=\"#777\">" << escape(r.note)
        << "</text>";
      continue;
    }
    const double x0 = sx(r.low), x1 = sx(std::max(r.high, r.low));
    o << "<g class=\"interval\"><title>" << escape(r.label) << ": " << escape(format_value(r.low, c.value.format))
      << " .. " << escape(format_value(std::max(r.high, r.low), c.value.format)) << "</title><line x1=\"" << num(x0)
      << "\" y1=\"" << num(y) << "\" x2=\"" << num(std::max(x1, x0 + 2)) << "\" y2=\"" << num(y) << "\" stroke=\""
      << colour(0) << "\" stroke-width=\"8\"/><line x1=\"" << num(x0) << "\" y1=\"" << num(y - 7) << "\" x2=\""
      << num(x0) << "\" y2=\"" << num(y + 7) << "\" stroke=\"#222\"/></g>";
  }
  o << "</g>\n</svg>\n";
  return o.str();
}

}  // namespace tvie::svg
