// The API reference: Swagger UI (swagger-ui-bundle.js, loaded before this
// file) renders this instance's OpenAPI document, on the same origin, into
// #swagger-ui, in its base layout (no top bar to load another document).
// Nothing is fetched from elsewhere: validatorUrl null rules out the badge
// that loads from validator.swagger.io, and queryConfigEnabled false (the
// default, said here on purpose) keeps a ?url= in the address from loading
// another document. The page's policy (api.ContentSecurityPolicy) would
// block either anyway.
(function () {
  'use strict';
  var root = document.getElementById('swagger-ui');
  if (!root || typeof window.SwaggerUIBundle !== 'function') {
    return;
  }
  window.ui = window.SwaggerUIBundle({
    url: root.getAttribute('data-spec'),
    domNode: root,
    validatorUrl: null,
    queryConfigEnabled: false,
    deepLinking: true
  });
})();
