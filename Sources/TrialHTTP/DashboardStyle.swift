/// The dashboard's style sheet, `/style.css`: one column on a phone, tables that scroll
/// sideways rather than overflow, charts scaled to the width they have.
extension Gateway {
  static let styleSheet = """
    :root { color-scheme: light; --line: #dddddd; --muted: #5f6368; --accent: #1565c0; }
    * { box-sizing: border-box; }
    body { margin: 0; font: 15px/1.45 system-ui, sans-serif; color: #202124; background: #fafafa; }
    header { background: #202124; padding: 0.5rem 1rem; }
    nav { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; align-items: center; }
    nav a { color: #ffffff; text-decoration: none; font-weight: 600; }
    nav .logout { margin-left: auto; }
    main { max-width: 64rem; margin: 0 auto; padding: 1rem; }
    h1 { font-size: 1.5rem; margin: 0.5rem 0 1rem; }
    h2 { font-size: 1.15rem; margin: 1.5rem 0 0.5rem; }
    a { color: var(--accent); }
    table { border-collapse: collapse; width: 100%; background: #ffffff; }
    th, td { text-align: left; padding: 0.35rem 0.6rem; border-bottom: 1px solid var(--line); white-space: nowrap; }
    td.count, td.started, td.converted, td.pending, td.abandoned, td.rate, td.lag, td.backlog { text-align: right; }
    tr.total td { font-weight: 600; }
    .scroll { overflow-x: auto; }
    svg.chart { width: 100%; height: auto; background: #ffffff; border: 1px solid var(--line); }
    figure { margin: 0; }
    figcaption, .note { color: var(--muted); font-size: 0.9rem; }
    .error { color: #b00020; font-weight: 600; }
    .filters, .change { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: end; margin: 0.5rem 0; }
    label { display: inline-flex; flex-direction: column; font-size: 0.9rem; color: var(--muted); }
    input, select, button { font: inherit; padding: 0.3rem 0.5rem; }
    button { cursor: pointer; }
    dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; }
    dt { font-weight: 600; }
    dd { margin: 0; overflow-wrap: anywhere; }
    .label { display: inline-block; margin: 0 0.25rem 0.25rem 0; }
    .description { display: block; color: var(--muted); font-size: 0.85rem; }
    #login { max-width: 24rem; display: flex; flex-direction: column; gap: 0.75rem; }
    @media (max-width: 40rem) { main { padding: 0.5rem; } th, td { padding: 0.3rem 0.4rem; } }

    """

  /// `GET /style.css`, with no token: the login page needs it.
  static func style() -> HTTPResponse {
    var response = HTTPResponse.text(200, styleSheet, type: "text/css; charset=utf-8")
    response.headers += [("Cache-Control", "max-age=3600"), ("X-Content-Type-Options", "nosniff")]
    return response
  }
}
