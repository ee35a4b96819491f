package main

import "github.com/stretchr/testify/assert"

// showsShopAndReference asserts the payment page names the shop and the
// item (none for an API payment) and shows the payment id as the
// reference to keep.
func (p *browserPage) showsShopAndReference(shop, item, id string) {
	p.t.Helper()
	assert.True(p.t, p.visible("#shop"), "the shop is named")
	assert.Equal(p.t, shop, p.text("#shop"))
	if item == "" {
		assert.False(p.t, p.visible("#item"))
	} else {
		assert.True(p.t, p.visible("#item"), "the item is named")
		assert.Equal(p.t, item, p.text("#item"))
	}
	assert.True(p.t, p.visible("#reference-id"), "the reference is shown")
	assert.Equal(p.t, id, p.text("#reference-id"))
}
