// paywatch merchant dashboard: copy buttons and a payment's live status.
// Every page works without this file; it only adds conveniences. It runs
// under the dashboard's Content-Security-Policy (script-src 'self'): no
// inline handlers, no eval, no other origin.
(function () {
  'use strict';

  // ---- Copy buttons -----------------------------------------------------
  // A button[data-copy] copies the value (or, for other elements, the text)
  // of the element whose id it names. The buttons are rendered hidden, as
  // they do nothing without this script.

  var announcer = null;

  // announce tells screen readers what just happened.
  function announce(text) {
    if (!announcer) {
      announcer = document.createElement('p');
      announcer.className = 'sr-only';
      announcer.setAttribute('role', 'status');
      document.body.appendChild(announcer);
    }
    announcer.textContent = '';
    setTimeout(function () { announcer.textContent = text; }, 50);
  }

  function textOf(el) {
    if ('value' in el && typeof el.value === 'string' && el.tagName !== 'LI' && el.tagName !== 'BUTTON') {
      return el.value;
    }
    return (el.innerText || el.textContent || '').trim();
  }

  // selectAndCopy is the fallback for browsers without the clipboard API
  // (or pages not served over HTTPS): select the text and ask the browser.
  function selectAndCopy(el) {
    var ok = false;
    try {
      if (typeof el.select === 'function') {
        el.focus();
        el.select();
      } else {
        var range = document.createRange();
        range.selectNodeContents(el);
        var sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
      }
      ok = document.execCommand('copy');
    } catch (e) {
      ok = false;
    }
    return ok;
  }

  function wireCopy(btn) {
    var target = document.getElementById(btn.getAttribute('data-copy'));
    if (!target) return;
    var label = btn.textContent;
    var timer = null;
    btn.hidden = false;
    btn.addEventListener('click', function () {
      var done = function (ok) {
        btn.textContent = ok ? 'Copied' : 'Select and copy';
        announce(ok ? 'Copied' : 'Could not copy: the text is selected, copy it yourself');
        if (timer) clearTimeout(timer);
        timer = setTimeout(function () { btn.textContent = label; timer = null; }, 2000);
      };
      var text = textOf(target);
      if (navigator.clipboard && navigator.clipboard.writeText && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(selectAndCopy(target)); });
      } else {
        done(selectAndCopy(target));
      }
    });
  }

  var copyButtons = document.querySelectorAll('button[data-copy]');
  for (var i = 0; i < copyButtons.length; i++) wireCopy(copyButtons[i]);

  // ---- Live status of a payment ------------------------------------------
  // #payment-live[data-status-url] is polled every 5 seconds while the
  // payment can still change; a final status (paid, overpaid, cancelled)
  // stops it. An expired payment may still receive late funds, so it is
  // polled too, but only every 30 seconds.

  var live = document.getElementById('payment-live');
  var url = live && live.getAttribute('data-status-url');
  if (!url || !window.fetch) return;

  var FAST_MS = 5000;
  var SLOW_MS = 30000;
  var FINAL = { paid: true, overpaid: true, cancelled: true };
  var SLOW = { expired: true };

  var first = {
    status: live.getAttribute('data-status') || '',
    transactions: Number(live.getAttribute('data-transactions') || 0)
  };
  var status = first.status;
  var timer = null;
  var busy = false;
  var stopped = false;

  function pad(n) { return (n < 10 ? '0' : '') + n; }

  function clock(d) {
    return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }

  function each(name, fn) {
    var els = live.querySelectorAll('[data-live="' + name + '"]');
    for (var i = 0; i < els.length; i++) fn(els[i]);
  }

  function setText(name, value) {
    if (value === undefined || value === null) return;
    var text = String(value);
    each(name, function (el) {
      if (el.textContent !== text) el.textContent = text;
    });
  }

  function apply(d) {
    if (typeof d.status === 'string' && d.status) {
      status = d.status;
      live.setAttribute('data-status', status);
      each('status', function (el) {
        el.textContent = status;
        // Keep the element's other classes; replace its status-* class.
        var keep = [];
        var classes = el.className.split(/\s+/);
        for (var i = 0; i < classes.length; i++) {
          if (classes[i] && classes[i].indexOf('status-') !== 0) keep.push(classes[i]);
        }
        keep.push('status-' + status);
        el.className = keep.join(' ');
      });
    }
    setText('paid_amount', d.paid_amount);
    setText('checked', 'updated ' + clock(new Date()));
    var changed = status !== first.status ||
      (typeof d.transactions === 'number' && d.transactions !== first.transactions);
    if (changed) each('changed', function (el) { el.hidden = false; });
  }

  function delay() {
    return SLOW[status] ? SLOW_MS : FAST_MS;
  }

  function schedule() {
    if (stopped || FINAL[status]) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(poll, delay());
  }

  function poll() {
    timer = null;
    if (stopped) return;
    // A tab in the background waits; it polls again when shown.
    if (document.hidden || busy) return;
    busy = true;
    fetch(url, {
      credentials: 'same-origin',
      cache: 'no-store',
      headers: { Accept: 'application/json' }
    })
      .then(function (r) {
        if (r.status === 401 || r.status === 403 || r.status === 404) {
          // Signed out, or the project is no longer ours: a reload shows why.
          stopped = true;
          setText('checked', 'live updates stopped: reload the page');
          return null;
        }
        return r.ok ? r.json() : null;
      })
      .then(function (d) {
        if (d) apply(d);
      })
      .catch(function () { /* offline for a moment: the next round retries */ })
      .then(function () {
        busy = false;
        schedule();
      });
  }

  document.addEventListener('visibilitychange', function () {
    if (!document.hidden && !stopped && !busy && !FINAL[status] && !timer) poll();
  });

  schedule();
})();
