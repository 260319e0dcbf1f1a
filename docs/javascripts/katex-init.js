// Render the maths that pymdownx.arithmatex (generic mode) leaves in <span/div class="arithmatex">
// as \( ... \) and \[ ... \], with the KaTeX vendored in docs/javascripts/katex (no network).
// A TeX error is shown in red in place (throwOnError: false), so a screenshot reveals it.
(function () {
  "use strict";
  function render() {
    var maths = document.querySelectorAll(".arithmatex");
    for (var i = 0; i < maths.length; i++) {
      var tex = maths[i].textContent || maths[i].innerText;
      var display = tex.startsWith("\\[") && tex.endsWith("\\]");
      var inline = tex.startsWith("\\(") && tex.endsWith("\\)");
      if (display || inline) {
        katex.render(tex.slice(2, -2), maths[i], {displayMode: display, throwOnError: false, errorColor: "#cc0000"});
      }
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", render);
  } else {
    render();
  }
})();
