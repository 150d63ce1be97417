test('probe', async () => {
  expect(1).toBe(1);
});
