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

  // An axis tooltip (every series at the hovered point) built as elements: ECharts' own writes its markup as HTML with
  // style attributes, which the page's Content-Security-Policy refuses (style-src 'self', no 'unsafe-inline'). The
  // look is ECharts' (portal.css, .chart-tooltip); a series' colour is set through the CSSOM, which the policy allows.
  function axisTooltip(option, format) {
    const hidden = new Set((option.series || []).flatMap((series, index) => (series.tooltip && series.tooltip.show === false ? [index] : [])));
    return (params) => {
      const items = (Array.isArray(params) ? params : [params]).filter((item) => !hidden.has(item.seriesIndex));
      const box = document.createElement("div");
      box.className = "chart-tooltip";
      if (items.length && items[0].axisValueLabel !== undefined) {
        const head = box.appendChild(document.createElement("div"));
        head.className = "chart-tooltip-head";
        head.textContent = items[0].axisValueLabel;
      }
      for (const item of items) {
        const row = box.appendChild(document.createElement("div"));
        row.className = "chart-tooltip-row";
        const marker = row.appendChild(document.createElement("span"));
        marker.className = "chart-tooltip-marker";
        if (typeof item.color === "string") marker.style.backgroundColor = item.color;
        row.appendChild(document.createElement("span")).textContent = item.seriesName;
        const value = row.appendChild(document.createElement("span"));
        value.className = "chart-tooltip-value";
        value.textContent = format(Array.isArray(item.value) ? item.value[item.value.length - 1] : item.value);
      }
      return box;
    };
  }

  function draw(element) {
    if (element.dataset.chartDrawn || !window.echarts) return;
    const source = document.getElementById(element.dataset.chart);
    if (!source) return;
    const { option, unit } = JSON.parse(source.textContent);
    const format = formatter(unit || {});
    option.textStyle = Object.assign({ fontFamily: getComputedStyle(document.body).fontFamily }, option.textStyle);
    if (option.tooltip && !option.tooltip.formatter) option.tooltip.formatter = axisTooltip(option, format);
    // The server leaves room for the legend's rows at a desktop's width; on a phone's they would wrap into more rows
    // than that and over the plot, so the legend keeps one row there and pages through its entries instead.
    if (option.legend && element.clientWidth < 600) option.legend = Object.assign({}, option.legend, { type: "scroll" });
    // The height the server chose (rows and legend): set here, through the CSSOM, as the page's Content-Security-Policy
    // refuses style attributes in the HTML.
    element.style.height = `${Number(element.dataset.height) || 300}px`;
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
