// The portal's charts: every element with data-chart="<id>" is drawn by Apache ECharts (static/vendor/echarts/) from
// the option the server wrote into <script type="application/json" id="<id>"> (portal/charts.py). Every text in an
// option (series, axes, legend, labels, tooltips) comes translated from the server; this file writes numbers only,
// in the page's language. Charts are drawn on load and after every htmx swap, and the instances whose element
// left the page are disposed of, so swapping a period in and out never piles charts or listeners up.
(function () {
  const live = new Set();

  function formatter(unit) {
    const digits = unit.digits || 0;
    const number = new Intl.NumberFormat(document.documentElement.lang || undefined, {
      minimumFractionDigits: digits,
      maximumFractionDigits: digits,
    });
    return (value) => {
      if (value === null || value === undefined || value === "-" || Number.isNaN(Number(value))) return "—";
      return (unit.prefix || "") + number.format(Number(value)) + (unit.suffix || "");
    };
  }

  function draw(element) {
    if (element.dataset.chartDrawn || !window.echarts) return;
    const source = document.getElementById(element.dataset.chart);
    if (!source) return;
    const { option, unit } = JSON.parse(source.textContent);
    const format = formatter(unit || {});
    option.textStyle = Object.assign({ fontFamily: getComputedStyle(document.body).fontFamily }, option.textStyle);
    if (option.tooltip && !option.tooltip.formatter) option.tooltip.valueFormatter = format;
    // The server leaves room for the legend's rows at a desktop's width; on a phone's they would wrap into more rows
    // than that and over the plot, so the legend keeps one row there and pages through its entries instead.
    if (option.legend && element.clientWidth < 600) option.legend = Object.assign({}, option.legend, { type: "scroll" });
    // SVG, not canvas: the chart's texts are in the page (readable by the browser tests, selectable, crisp).
    const chart = window.echarts.init(element, null, { renderer: "svg" });
    chart.setOption(option);
    // A data point carrying a link (an organization's row or bar) opens its page.
    chart.on("click", (params) => {
      if (params.data && params.data.url) window.location.assign(params.data.url);
    });
    element.dataset.chartDrawn = "1";
    live.add(chart);
  }

  function sweep() {
    for (const chart of live) {
      if (chart.isDisposed() || !chart.getDom().isConnected) {
        if (!chart.isDisposed()) chart.dispose();
        live.delete(chart);
      }
    }
    document.querySelectorAll("[data-chart]").forEach(draw);
  }

  document.addEventListener("DOMContentLoaded", sweep);
  document.addEventListener("htmx:afterSettle", sweep);
  window.addEventListener("resize", () => live.forEach((chart) => chart.resize()));
  // For the browser tests: how many chart instances are alive.
  window.portalCharts = { count: () => live.size };
})();
