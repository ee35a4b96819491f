// paywatch merchant dashboard: copy buttons, dates in the viewer's time
// zone, folded filters, and the live status of a payment and of the list.
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

  // ---- Dates in the viewer's time zone ----------------------------------
  // The server writes every instant as <time datetime="...Z" title="UTC">
  // with the UTC text "27 Nov 2026, 14:52 UTC". Here the text becomes the
  // same form in the viewer's time zone ("27 Nov 2026, 23:52"); the title
  // keeps the exact UTC value, shown on hover.

  var MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  var dateParts = null;
  try {
    dateParts = new Intl.DateTimeFormat('en-GB', {
      year: 'numeric', month: 'numeric', day: 'numeric',
      hour: '2-digit', minute: '2-digit', hourCycle: 'h23'
    });
    if (typeof dateParts.formatToParts !== 'function') dateParts = null;
  } catch (e) {
    dateParts = null;
  }

  function pad(n) { return (n < 10 ? '0' : '') + n; }

  // localDate writes d as "27 Nov 2026, 14:52" in the viewer's time zone.
  function localDate(d) {
    var p = { day: d.getDate(), month: d.getMonth() + 1, year: d.getFullYear(), hour: pad(d.getHours()), minute: pad(d.getMinutes()) };
    if (dateParts) {
      var parts = dateParts.formatToParts(d);
      for (var i = 0; i < parts.length; i++) p[parts[i].type] = parts[i].value;
    }
    return Number(p.day) + ' ' + MONTHS[Number(p.month) - 1] + ' ' + p.year + ', ' + p.hour + ':' + p.minute;
  }

  function localizeTimes(root) {
    var els = root.querySelectorAll('time[datetime]');
    for (var i = 0; i < els.length; i++) {
      var d = new Date(els[i].getAttribute('datetime'));
      if (isNaN(d.getTime())) continue;
      var text = localDate(d);
      if (els[i].textContent !== text) els[i].textContent = text;
    }
  }

  localizeTimes(document);

  // ---- Folded filters ---------------------------------------------------
  // The list's filters come folded (details#filters), so that on a phone
  // the payments are on the first screen; where there is room they open.

  var filters = document.getElementById('filters');
  if (filters && window.matchMedia && window.matchMedia('(min-width: 40rem)').matches) filters.open = true;

  // ---- Live updates -----------------------------------------------------
  // The payment page and the payment list poll every 5 seconds while the
  // tab is shown (the list slower while it does not change); a tab in the
  // background waits, and polls again when shown. A signed-out session, or
  // a project no longer ours, stops them. The polls do not keep a session
  // alive: one nobody uses ends after its 2 idle hours, and they stop.

  var FAST_MS = 5000;
  var SLOW_MS = 30000;

  function clock(d) {
    return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }

  // poller calls fetchOnce (which returns a promise of false to stop) at
  // the pace delay() says, one call at a time. wake() starts the wait
  // again at the pace delay() says now (after it dropped).
  function poller(fetchOnce, delay) {
    var timer = null;
    var busy = false;
    var stopped = false;
    function schedule() {
      if (stopped) return;
      var ms = delay();
      if (!ms) return;
      if (timer) clearTimeout(timer);
      timer = setTimeout(run, ms);
    }
    function run() {
      timer = null;
      if (stopped || document.hidden || busy) return;
      busy = true;
      fetchOnce()
        .then(function (go) { if (go === false) stopped = true; })
        .catch(function () { /* offline for a moment: the next round retries */ })
        .then(function () {
          busy = false;
          schedule();
        });
    }
    document.addEventListener('visibilitychange', function () {
      if (!document.hidden && !stopped && !busy && !timer && delay()) run();
    });
    schedule();
    return {
      wake: function () { if (!busy && !document.hidden) schedule(); }
    };
  }

  // ended reports an answer that means the updates must stop: signed
  // out, no longer in the project, or sent elsewhere (a sign-in page).
  function ended(r) {
    return r.status === 401 || r.status === 403 || r.status === 404 || r.redirected;
  }

  // ---- Live status of a payment -----------------------------------------
  // #payment-live[data-status-url] is polled while the payment can still
  // change; a final status (paid, overpaid, cancelled) stops it. An expired
  // payment may still receive late funds, so it is polled too, but only
  // every 30 seconds.

  function livePayment(live, url) {
    var FINAL = { paid: true, overpaid: true, cancelled: true };
    var SLOW = { expired: true };
    var first = {
      status: live.getAttribute('data-status') || '',
      transactions: Number(live.getAttribute('data-transactions') || 0)
    };
    var status = first.status;

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

    poller(function () {
      return fetch(url, {
        credentials: 'same-origin',
        cache: 'no-store',
        headers: { Accept: 'application/json' }
      }).then(function (r) {
        if (ended(r)) {
          setText('checked', 'live updates stopped: reload the page');
          return false;
        }
        return r.ok ? r.json().then(function (d) { apply(d); }) : null;
      });
    }, function () {
      if (FINAL[status]) return 0;
      return SLOW[status] ? SLOW_MS : FAST_MS;
    });
  }

  // ---- Live payment list ------------------------------------------------
  // #payments-live[data-rows-url] holds the count, rows and pages of the
  // list; the URL answers them afresh for the same filters and page, and
  // they replace the ones shown when they differ. Each poll sends the ETag
  // of what is shown (the page's data-etag at first), so an unchanged list
  // is a 304 with no body and nothing on the page moves. Rows that are new
  // or whose status or amount received changed are marked until the next
  // change. The pace is 5 s; after every 3 unchanged answers in a row the
  // wait doubles, up to 30 s, and it is 5 s again after a change or when
  // the user does something on the page.

  function liveList(list, url) {
    var note = document.querySelector('[data-live="checked"]');
    var etag = list.getAttribute('data-etag') || '';
    var unchanged = 0;

    function states() {
      var out = {};
      var rows = list.querySelectorAll('tr[data-id]');
      for (var i = 0; i < rows.length; i++) out[rows[i].getAttribute('data-id')] = rows[i].getAttribute('data-state');
      return out;
    }

    function apply(html) {
      var before = states();
      var focused = document.activeElement && list.contains(document.activeElement) ? document.activeElement.getAttribute('href') : null;
      list.innerHTML = html;
      localizeTimes(list);
      var rows = list.querySelectorAll('tr[data-id]');
      for (var i = 0; i < rows.length; i++) {
        var was = before[rows[i].getAttribute('data-id')];
        if (was !== rows[i].getAttribute('data-state')) rows[i].classList.add('changed');
      }
      if (focused) {
        var links = list.querySelectorAll('a[href]');
        for (var j = 0; j < links.length; j++) {
          if (links[j].getAttribute('href') === focused) { links[j].focus(); break; }
        }
      }
    }

    function checked() {
      if (note) note.textContent = 'Updated ' + clock(new Date()) + '.';
    }

    function pace() {
      return Math.min(FAST_MS * Math.pow(2, Math.floor(unchanged / 3)), SLOW_MS);
    }

    var polls = poller(function () {
      var headers = { Accept: 'text/html' };
      if (etag) headers['If-None-Match'] = etag;
      return fetch(url, {
        credentials: 'same-origin',
        cache: 'no-store',
        headers: headers
      }).then(function (r) {
        if (ended(r)) {
          if (note) note.textContent = 'Live updates stopped: reload the page.';
          return false;
        }
        if (r.status === 304) {
          unchanged++;
          checked();
          return null;
        }
        if (!r.ok) return null;
        var next = r.headers.get('ETag') || '';
        return r.text().then(function (html) {
          if (next && next === etag) {
            unchanged++;
          } else {
            unchanged = 0;
            apply(html);
          }
          etag = next;
          checked();
        });
      });
    }, pace);

    // The user is here: back to the fast pace.
    function active() {
      var slow = pace() > FAST_MS;
      unchanged = 0;
      if (slow) polls.wake();
    }
    var events = ['pointerdown', 'keydown', 'wheel', 'touchstart'];
    for (var k = 0; k < events.length; k++) document.addEventListener(events[k], active, { passive: true });
    document.addEventListener('visibilitychange', function () { if (!document.hidden) active(); });
  }

  var live = document.getElementById('payment-live');
  if (live && live.getAttribute('data-status-url') && window.fetch) livePayment(live, live.getAttribute('data-status-url'));
  var list = document.getElementById('payments-live');
  if (list && list.getAttribute('data-rows-url') && window.fetch) liveList(list, list.getAttribute('data-rows-url'));
})();
