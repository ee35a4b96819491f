// paywatch hosted payment page: live status, countdown, copy buttons and
// network selection without a reload. The page works without this file
// (plain form posts and links); this only adds the live parts.
(function () {
  'use strict';

  var REFRESH_MS = 10000;
  var FINAL = { paid: true, overpaid: true, cancelled: true };
  var OPEN = { choose: true, pending: true, confirming: true, partial: true };
  var PAY = { pending: true, 'pending-late': true, confirming: true, partial: true };
  // The wallet request is offered only where the buyer should send now.
  var WALLET = { pending: true, partial: true };

  var root = document.getElementById('payment');
  if (!root) return;

  var id = root.getAttribute('data-id');
  // The server's clock decides expiry; keep the countdown on it even when
  // the device's clock is off.
  var skew = Number(root.getAttribute('data-now')) - Date.now();
  var wallet = document.getElementById('wallet');
  var data = {
    status: root.getAttribute('data-status'),
    network: root.getAttribute('data-network') || null,
    expiresMs: Number(root.getAttribute('data-expires')),
    // A transfer is still confirming (a partial payment reads partial
    // while its follow-up confirms).
    unconfirmed: root.getAttribute('data-state') === 'confirming',
    // The server offered a wallet request.
    wallet: !!wallet && !wallet.hidden,
    // A memo payment's memo (on SOLANA a Solana Pay reference, on TON the
    // transfer's comment), '' for any other.
    memo: (document.getElementById('memo') || {}).textContent || ''
  };
  var timer = null;
  var busy = false;

  function now() { return Date.now() + skew; }

  // stateOf mirrors the server's pageState: the status, refined by whether
  // a network was chosen, whether a transfer is still confirming and
  // whether the window is still open.
  function stateOf(d) {
    var open = now() < d.expiresMs;
    if (d.status === 'partial' && d.unconfirmed) return 'confirming';
    if (d.status === 'partial' && !open) return 'pending-late';
    if (d.status !== 'pending') return d.status;
    if (!d.network) return open ? 'choose' : 'choose-closed';
    return open ? 'pending' : 'pending-late';
  }

  // Amounts are written as the page's language writes them (the server's
  // locale.Amount): its decimal separator, every digit kept, thousands
  // never grouped.
  var DECIMAL = root.getAttribute('data-decimal') || '.';
  var AMOUNTS = { amount: true, paid_amount: true, missing_amount: true };
  function amountText(v) {
    return String(v).replace('.', DECIMAL);
  }

  function setText(name, value) {
    if (value === undefined || value === null) return;
    if (AMOUNTS[name]) value = amountText(value);
    var els = root.querySelectorAll('[data-f="' + name + '"]');
    for (var i = 0; i < els.length; i++) {
      if (els[i].textContent !== String(value)) els[i].textContent = String(value);
    }
  }

  function show(el, on) {
    if (el) el.hidden = !on;
  }

  function two(n) { return (n < 10 ? '0' : '') + n; }

  function tick() {
    var left = Math.max(0, Math.floor((data.expiresMs - now()) / 1000));
    var h = Math.floor(left / 3600), m = Math.floor(left % 3600 / 60), s = left % 60;
    var text = (h > 0 ? h + ':' + two(m) : two(m)) + ':' + two(s);
    var el = document.getElementById('countdown');
    if (el && el.textContent !== text) el.textContent = text;
    render();
  }

  function render() {
    var state = stateOf(data);
    root.setAttribute('data-status', data.status);
    root.setAttribute('data-state', state);
    root.setAttribute('data-network', data.network || '');
    var blocks = root.querySelectorAll('.state');
    for (var i = 0; i < blocks.length; i++) {
      blocks[i].hidden = blocks[i].getAttribute('data-state') !== state;
    }
    show(document.getElementById('choose'), state === 'choose');
    show(document.getElementById('pay'), !!PAY[state] && !!data.address);
    show(document.getElementById('countdown-box'), !!OPEN[state]);
    showWallet(!!WALLET[state] && data.wallet);
    show(document.getElementById('network-line'), !!data.network);
  }

  // showWallet shows or hides the wallet link and toggle; hidden, the
  // address QR code is shown in place of the wallet one.
  function showWallet(on) {
    show(wallet, on);
    var pay = document.getElementById('pay');
    var toggle = document.getElementById('qr-toggle');
    if (!on && pay && pay.getAttribute('data-qr') === 'wallet') {
      pay.setAttribute('data-qr', 'address');
      if (toggle) toggle.setAttribute('href', toggle.getAttribute('data-wallet-href'));
    }
    // A memo payment has no address-only QR code to offer (the address
    // alone would lose the memo): its wallet request, for what is still
    // to send, is shown whenever there is one.
    if (on && data.memo && pay) pay.setAttribute('data-qr', 'wallet');
  }

  // setMemo takes a memo payment's memo (null or '' for any other
  // payment): the memo row with its copy button and the memo's hints
  // show for a memo payment only, the address-only ones for any other.
  function setMemo(memo) {
    data.memo = memo || '';
    setText('memo', data.memo);
    if (data.memo) memoWords(data.network);
    var els = root.querySelectorAll('[data-memo]');
    for (var i = 0; i < els.length; i++) {
      els[i].hidden = (els[i].getAttribute('data-memo') === 'only') !== !!data.memo;
    }
    var box = document.getElementById('memo-box');
    var alt = box && box.getAttribute('data-qr-alt');
    if (data.memo && alt) {
      var qrs = [document.getElementById('qr'), document.getElementById('wallet-qr')];
      for (var j = 0; j < qrs.length; j++) if (qrs[j]) qrs[j].setAttribute('alt', alt);
    }
  }

  // The kind of memo whose words the memo row has (the server wrote them).
  var memoKind = root.getAttribute('data-memo-kind') || '';

  // memoNetwork reports whether network takes memo payments on this page.
  function memoNetwork(network) {
    var copies = root.querySelectorAll('.memo-texts[data-memo-networks]');
    for (var i = 0; i < copies.length; i++) {
      if ((' ' + copies[i].getAttribute('data-memo-networks') + ' ').indexOf(' ' + network + ' ') >= 0) return true;
    }
    return false;
  }

  // memoWords puts the words of network's kind of memo (a reference a
  // wallet adds, a comment the buyer may have to type) into the memo row
  // and its hints, from the copies the page holds of each kind offered
  // while the buyer chooses; a page without them already has its words.
  function memoWords(network) {
    var words = null;
    var copies = root.querySelectorAll('.memo-texts[data-memo-networks]');
    for (var i = 0; i < copies.length; i++) {
      if ((' ' + copies[i].getAttribute('data-memo-networks') + ' ').indexOf(' ' + network + ' ') >= 0) words = copies[i];
    }
    if (!words || words.getAttribute('data-memo-kind') === memoKind) return;
    memoKind = words.getAttribute('data-memo-kind');
    var box = document.getElementById('memo-box');
    if (box) box.setAttribute('data-qr-alt', words.getAttribute('data-qr-alt'));
    var parts = words.querySelectorAll('[data-memo-text]');
    for (var j = 0; j < parts.length; j++) {
      var el = root.querySelector(parts[j].getAttribute('data-memo-text'));
      if (!el) continue;
      while (el.firstChild) el.removeChild(el.firstChild);
      for (var c = parts[j].firstChild; c; c = c.nextSibling) el.appendChild(c.cloneNode(true));
    }
  }

  // setWallet takes the wallet request of a status answer d, or withdraws
  // it (d null): no link and no QR code of it stay in the page.
  function setWallet(d) {
    var link = document.getElementById('wallet-link');
    var wqr = document.getElementById('wallet-qr');
    var uri = d ? d.wallet_uri : '';
    if (link && link.getAttribute('href') !== uri) link.setAttribute('href', uri);
    if (wqr && d && wqr.getAttribute('src') !== d.wallet_qr_code) wqr.setAttribute('src', d.wallet_qr_code);
    if (wqr && !d) wqr.removeAttribute('src');
    data.wallet = !!d;
  }

  // apply takes a status response (or a select-network answer) into the page.
  function apply(d) {
    if (d.status) data.status = d.status;
    if (d.expires_at) data.expiresMs = Date.parse(d.expires_at);
    if (d.network) data.network = d.network;
    if (d.address) {
      data.address = d.address;
      setText('address', d.address);
    }
    if ('memo' in d) setMemo(d.memo);
    if (d.qr_code) {
      var qr = document.getElementById('qr');
      if (qr && qr.getAttribute('src') !== d.qr_code) qr.setAttribute('src', d.qr_code);
    }
    if (d.status) {
      // A status answer without wallet_uri withdraws the request: a
      // transfer is confirming, time is up, or nothing is to be sent.
      data.unconfirmed = d.confirmations !== undefined && d.confirmations !== null;
      setWallet(d.wallet_uri && d.wallet_qr_code ? d : null);
    }
    setText('amount', d.amount);
    setText('token', d.token);
    setText('network_name', d.network_name);
    setText('paid_amount', d.paid_amount);
    setText('missing_amount', d.missing_amount);
    setText('confirmations', d.confirmations);
    setText('required_confirmations', d.required_confirmations);
    if ('notice' in d || d.status) {
      // The API's notice is the contract's English; the page says the
      // same in its language, with the amount written as the page does.
      var box = document.getElementById('notice');
      var text = d.notice && box ? (root.getAttribute('data-notice') || d.notice)
        .replace('{amount}', amountText(d.amount)).replace('{token}', d.token || '') : '';
      setText('notice', text);
      show(box, !!d.notice);
    }
    render();
  }

  function refresh() {
    return fetch('/api/pay/' + encodeURIComponent(id), { cache: 'no-store', headers: { Accept: 'application/json' } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (d) {
        if (d) apply(d);
        if (FINAL[data.status] && timer) {
          clearInterval(timer);
          timer = null;
        }
      })
      .catch(function () { /* offline for a moment: the next round retries */ });
  }

  function errorText(attr) {
    return root.getAttribute(attr) || '';
  }

  function showError(msg) {
    var el = document.getElementById('error');
    if (!el) return;
    el.textContent = msg || '';
    el.hidden = !msg;
  }

  var form = document.getElementById('choose-form');
  if (form) {
    form.addEventListener('submit', function (ev) {
      var btn = ev.submitter;
      if (!btn || !btn.value || !window.fetch) return; // plain form post
      ev.preventDefault();
      if (busy) return;
      busy = true;
      var parts = btn.value.split(':');
      var buttons = form.querySelectorAll('button');
      for (var i = 0; i < buttons.length; i++) buttons[i].disabled = true;
      showError('');
      fetch('/api/pay/' + encodeURIComponent(id) + '/select-network', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ network: parts[0], token: parts[1] })
      })
        .then(function (r) {
          return r.json().then(function (b) { return { ok: r.ok, body: b }; });
        })
        .then(function (res) {
          if (!res.ok) {
            showError(res.body && res.body.error ? res.body.error : errorText('data-failed'));
            return refresh();
          }
          res.body.network_name = btn.getAttribute('data-name');
          if (memoNetwork(parts[0])) {
            // A memo payment's memo comes with its status, not with this
            // answer: nothing to pay is shown until the memo is, or a
            // buyer could send without it.
            delete res.body.address;
            delete res.body.qr_code;
          }
          apply(res.body);
          return refresh();
        })
        .catch(function () { showError(errorText('data-offline')); })
        .then(function () {
          busy = false;
          for (var i = 0; i < buttons.length; i++) buttons[i].disabled = false;
        });
    });
  }

  // copyButton makes button id copy the text of element target (value()
  // when the page knows it), or select it where the clipboard is refused.
  function copyButton(id, target, value) {
    var copy = document.getElementById(id);
    if (!copy) return;
    copy.hidden = false;
    var copyText = copy.textContent;
    copy.addEventListener('click', function () {
      var text = value() || (document.getElementById(target) || {}).textContent || '';
      var done = function (ok) {
        copy.textContent = copy.getAttribute(ok ? 'data-copied' : 'data-select');
        setTimeout(function () { copy.textContent = copyText; }, 2000);
      };
      var fallback = function () {
        var sel = window.getSelection(), range = document.createRange();
        range.selectNodeContents(document.getElementById(target));
        sel.removeAllRanges();
        sel.addRange(range);
        var ok = false;
        try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
        done(ok);
      };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(function () { done(true); }, fallback);
      } else {
        fallback();
      }
    });
  }
  copyButton('copy', 'address', function () { return data.address; });
  copyButton('copy-memo', 'memo', function () { return data.memo; });

  // The QR toggle switches between the address QR code and the wallet one
  // in place; without JavaScript it is a link to the page with ?qr=wallet.
  var toggle = document.getElementById('qr-toggle');
  var pay = document.getElementById('pay');
  if (toggle && pay) {
    toggle.addEventListener('click', function (ev) {
      ev.preventDefault();
      var kind = pay.getAttribute('data-qr') === 'wallet' ? 'address' : 'wallet';
      pay.setAttribute('data-qr', kind);
      // The link offers the other QR code, as it does without JavaScript.
      toggle.setAttribute('href', toggle.getAttribute(kind === 'wallet' ? 'data-address-href' : 'data-wallet-href'));
    });
  }

  // Times in the buyer's own time zone, as the page's language writes
  // them; the server wrote UTC.
  var lang = root.getAttribute('data-lang') || 'en';
  var times = root.querySelectorAll('time[datetime]');
  for (var t = 0; t < times.length; t++) {
    var when = new Date(times[t].getAttribute('datetime'));
    if (isNaN(when.getTime()) || !window.Intl) continue;
    try {
      times[t].title = times[t].textContent;
      times[t].textContent = new Intl.DateTimeFormat(lang, { dateStyle: 'medium', timeStyle: 'short' }).format(when);
    } catch (e) { /* an old browser: the UTC text stays */ }
  }

  var jsOnly = root.querySelectorAll('.js-only');
  for (var j = 0; j < jsOnly.length; j++) jsOnly[j].hidden = false;

  data.address = (document.getElementById('address') || {}).textContent || '';
  tick();
  setInterval(tick, 1000);
  if (!FINAL[data.status]) timer = setInterval(refresh, REFRESH_MS);
})();
